// Instructions a NetMonitor hook adds to a call, counted with callgrind (exact on a noisy VM):
//
//   hook-cost plain|monitored ROUNDS
//
// Each mode makes the same calls: ROUNDS × read(2) of one byte from /dev/zero (a descriptor that
// is not a tracked connection), ROUNDS × send(2) + recv(2) of one byte over a connected TCP pair
// on 127.0.0.1 (tracked in "monitored" mode), and ROUNDS × open(2) + close(2) of /dev/null (close
// is hooked, open is not). scripts/bench-hooks runs them under callgrind and divides the
// difference by the number of hooked calls.
import Glibc
import NetMonitor

let arguments = CommandLine.arguments
func fail(_ message: String) -> Never {
  let line = message + "\n"
  _ = line.withCString { write(2, $0, strlen($0)) }
  exit(2)
}

guard arguments.count == 3, let rounds = Int(arguments[2]), ["plain", "monitored"].contains(arguments[1]) else {
  fail("usage: hook-cost plain|monitored ROUNDS")
}
// Both modes run with a second thread, as the monitored one has (the recorder): glibc's system call
// wrappers take a longer path (asynchronous-cancellation bookkeeping, ~29 instructions) as soon as
// a process has two threads, and that is not the hooks' cost. scripts/bench-hooks reports it apart.
nonisolated func startIdleThread() {
  var thread = pthread_t()
  pthread_create(&thread, nil, { _ in
    while true { sleep(3600) }
  }, nil)
}
if arguments[1] == "plain" && getenv("HOOK_COST_SINGLE_THREADED") == nil { startIdleThread() }
if arguments[1] == "monitored" {
  do {
    try NetMonitor.start(sink: NoOpSink())
  } catch {
    fail("\(error)")
  }
}

func loopbackPair() -> (Int32, Int32) {
  let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
  var address = sockaddr_in()
  address.sin_family = sa_family_t(AF_INET)
  address.sin_addr.s_addr = UInt32(0x7f00_0001).bigEndian
  var length = socklen_t(MemoryLayout<sockaddr_in>.size)
  withUnsafeMutablePointer(to: &address) {
    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
      _ = bind(listener, $0, length)
      _ = listen(listener, 1)
      _ = getsockname(listener, $0, &length)
    }
  }
  let client = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
  withUnsafePointer(to: &address) {
    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { _ = connect(client, $0, length) }
  }
  let server = accept(listener, nil, nil)
  close(listener)
  return (client, server)
}

@inline(never) func readZero(_ fd: Int32, _ buffer: UnsafeMutableRawPointer) { _ = read(fd, buffer, 1) }
@inline(never) func pingPong(_ client: Int32, _ server: Int32, _ buffer: UnsafeMutableRawPointer) {
  _ = send(client, buffer, 1, 0)
  _ = recv(server, buffer, 1, 0)
}

@inline(never) func openClose() { close(open("/dev/null", O_RDONLY)) }

let zero = open("/dev/zero", O_RDONLY)
let (client, server) = loopbackPair()
let buffer = UnsafeMutableRawPointer.allocate(byteCount: 1, alignment: 1)
for _ in 0..<rounds { readZero(zero, buffer) }
for _ in 0..<rounds { pingPong(client, server, buffer) }
for _ in 0..<rounds { openClose() }
print("\(arguments[1]): \(rounds) rounds done")
