import CNetMonitor
import Foundation
import Glibc
import Testing
import TestSupport

@testable import NetMonitor

/// `elfhook run` and `libElfHookPreload.so` from outside, as a user runs them: real programs
/// (sh, curl, python3) against the loopback server, records read back from the output file or
/// straight from the record rings.
@Suite("Injection: elfhook run and the preload library", .serialized)
struct InjectionTests {
  static func products() throws -> (elfhook: String, library: String) {
    let elfhook = try #require(BuiltProducts.elfhook, Comment(rawValue: BuiltProducts.missingMessage))
    return (elfhook, try #require(BuiltProducts.preloadLibrary))
  }

  /// Builds the C program `source` with the system compiler; the binary's URL.
  static func compile(_ source: String, named name: String, in scratch: TemporaryDirectory, flags: [String] = [])
    throws -> URL
  {
    let file = scratch.file(name + ".c")
    try source.write(to: file, atomically: true, encoding: .utf8)
    let binary = scratch.file(name)
    let build = try ProgramRun.run(["cc"] + flags + ["-o", binary.path, file.path])
    try #require(build.status == 0, "cc \(name).c: \(build.stderr)")
    return binary
  }

  static func connectionRecords(_ records: [Transaction], port: UInt16) -> [ConnectionRecord] {
    records.compactMap { record -> ConnectionRecord? in
      guard case .connection(let connection) = record, connection.peerPort == port else { return nil }
      return connection
    }
  }

  static func records(in file: URL) throws -> [Transaction] {
    try String(contentsOf: file, encoding: .utf8).split(separator: "\n").map { try Transaction(jsonLine: String($0)) }
  }

  static func httpRecords(_ records: [Transaction], port: UInt16) -> [HTTPRecord] {
    return records.compactMap { record -> HTTPRecord? in
      guard case .http(let http) = record, http.host?.hasSuffix(":\(port)") == true else { return nil }
      return http
    }
  }

  @Test("the command's stdout, exit status and stdin pass through unchanged")
  func passesThrough() throws {
    let (elfhook, _) = try Self.products()
    let script = "printf 'a\\0b\\n'; seq 1 2000; echo to-stderr >&2; exit 7"
    let plain = try ProgramRun.run(["sh", "-c", script])
    let monitored = try ProgramRun.run([elfhook, "run", "--", "sh", "-c", script])
    #expect(plain.status == 7)
    #expect(monitored.status == 7)
    #expect(monitored.stdout == plain.stdout)
    #expect(monitored.stderr.hasPrefix("to-stderr\n"))
    // The summary is whole lines: what is printed after it (a shell's prompt) starts a line.
    #expect(monitored.stderr.hasSuffix("No records.\n"))
  }

  @Test("a mistyped option is an error, never the command run")
  func unknownOption() throws {
    let (elfhook, _) = try Self.products()
    let run = try ProgramRun.run([elfhook, "run", "--outptu", "x.jsonl", "--", "true"])
    #expect(run.status == 64)
    #expect(run.stderr.contains("Unknown option '--outptu'"), "\(run.stderr)")
  }

  @Test("the command starts with no signal ignored that elfhook's spawn chose (glibc's posix_spawn ignores 32 and 33)")
  func signalDispositions() throws {
    let (elfhook, _) = try Self.products()
    let run = try ProgramRun.run([elfhook, "run", "--", "grep", "^SigIgn", "/proc/self/status"])
    #expect(run.status == 0)
    let mask = try #require(UInt64(String(decoding: run.stdout, as: UTF8.self).split(separator: "\t").last?
      .trimmingCharacters(in: .whitespacesAndNewlines) ?? "", radix: 16))
    #expect(mask & (1 << 31 | 1 << 32) == 0, "SigIgn \(String(mask, radix: 16))")
    // What the caller ignored stays ignored (nohup's SIGHUP, `trap '' TERM`): bit n − 1 is signal n.
    let trapped = try ProgramRun.run(["sh", "-c", "trap '' HUP TERM; exec \"$0\" run -- grep ^SigIgn /proc/self/status", elfhook])
    let inherited = try #require(UInt64(String(decoding: trapped.stdout, as: UTF8.self).split(separator: "\t").last?
      .trimmingCharacters(in: .whitespacesAndNewlines) ?? "", radix: 16))
    #expect(inherited & (1 << (SIGHUP - 1) | 1 << (SIGTERM - 1)) == 1 << (SIGHUP - 1) | 1 << (SIGTERM - 1),
      "SigIgn \(String(inherited, radix: 16))")
  }

  @Test("a forked child that forks again does not deadlock (the engine's lock is fresh in each child)")
  func nestedForks() throws {
    let (elfhook, _) = try Self.products()
    let script = "x=$( (y=$(echo nested); echo \"$y\") ); echo \"$x\""
    let run = try ProgramRun.run([elfhook, "run", "--", "bash", "-c", script], timeout: 20)
    #expect(run.status == 0)
    #expect(run.stdout == Data("nested\n".utf8))
  }

  @Test("a program that imports connect but not getsockopt is monitored, not crashed")
  func minimalImports() throws {
    let (elfhook, _) = try Self.products()
    let server = try LoopbackServer()
    let scratch = try TemporaryDirectory("injection")
    defer { scratch.remove() }
    // socket, connect, write, read, close: the connect hook still needs getsockopt's original.
    let binary = try Self.compile(
      """
      #include <arpa/inet.h>
      #include <stdio.h>
      #include <string.h>
      #include <sys/socket.h>
      #include <unistd.h>
      int main(void) {
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        struct sockaddr_in address = {.sin_family = AF_INET, .sin_port = htons(\(server.port))};
        address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        if (connect(fd, (struct sockaddr *)&address, sizeof address) != 0) return 2;
        const char *request = "GET /bytes/10 HTTP/1.1\\r\\nHost: minimal\\r\\nConnection: close\\r\\n\\r\\n";
        write(fd, request, strlen(request));
        char buffer[4096];
        while (read(fd, buffer, sizeof buffer) > 0) {}
        close(fd);
        puts("done");
        return 0;
      }
      """, named: "minimal", in: scratch)
    let imports = try ProgramRun.run(["readelf", "-rW", binary.path])
    #expect(!String(decoding: imports.stdout, as: UTF8.self).contains("getsockopt"))
    let output = scratch.file("records.jsonl")
    let run = try ProgramRun.run([elfhook, "run", "--output", output.path, "--", binary.path])
    #expect(run.status == 0, "\(run.stderr)")
    #expect(run.stdout == Data("done\n".utf8))
    #expect(Self.httpRecords(try Self.records(in: output), port: server.port).isEmpty, "Host: minimal has no port")
    let http = try Self.records(in: output).compactMap { record -> HTTPRecord? in
      if case .http(let http) = record { return http }
      return nil
    }
    #expect(http.map(\.target) == ["/bytes/10"])
  }

  @Test("nginx with sendfile on (Debian's default): bodies sent with sendfile64 are counted")
  func nginxSendfile() throws {
    let (elfhook, _) = try Self.products()
    try #require(LoopbackNginx.isInstalled, "nginx is not installed")
    let scratch = try TemporaryDirectory("injection")
    defer { scratch.remove() }
    try FileManager.default.createDirectory(at: scratch.file("www"), withIntermediateDirectories: true)
    try Data(repeating: UInt8(ascii: "s"), count: 50_000).write(to: scratch.file("www/file.bin"))
    let port = try LoopbackNginx.freePort()
    try """
      daemon off;
      master_process off;
      pid \(scratch.url.path)/nginx.pid;
      error_log \(scratch.url.path)/error.log;
      events { worker_connections 64; }
      http {
        access_log off;
        sendfile on;
        client_body_temp_path \(scratch.url.path)/body;
        server { listen 127.0.0.1:\(port); root \(scratch.url.path)/www; }
      }
      """.write(to: scratch.file("nginx.conf"), atomically: true, encoding: .utf8)
    let output = scratch.file("records.jsonl")
    let monitor = Process()
    monitor.executableURL = URL(fileURLWithPath: elfhook)
    monitor.arguments = [
      "run", "--output", output.path, "--", "/usr/sbin/nginx", "-p", scratch.url.path, "-c",
      scratch.file("nginx.conf").path, "-e", scratch.url.path + "/error.log",
    ]
    monitor.standardError = FileHandle.nullDevice
    try monitor.run()
    defer {
      if let pid = try? String(contentsOfFile: scratch.url.path + "/nginx.pid", encoding: .utf8), let number = Int32(pid.trimmingCharacters(in: .whitespacesAndNewlines)) {
        kill(number, SIGKILL)
      }
      monitor.waitUntilExit()
    }
    var listening = false
    for _ in 0..<300 where !listening {
      if let fd = try? Sockets.connect(port) {
        close(fd)
        listening = true
      } else {
        usleep(10_000)
      }
    }
    try #require(listening, "nginx did not start")
    let fetch = try ProgramRun.run(["curl", "-sf", "-o", "/dev/null", "http://127.0.0.1:\(port)/file.bin"])
    #expect(fetch.status == 0)
    usleep(100_000)  // the record is in the ring; give elfhook one drain
    let pid = try #require(Int32(try String(contentsOfFile: scratch.url.path + "/nginx.pid", encoding: .utf8)
      .trimmingCharacters(in: .whitespacesAndNewlines)))
    kill(pid, SIGKILL)
    monitor.waitUntilExit()
    let records = try Self.records(in: output)
    let served = records.compactMap { record -> HTTPRecord? in
      guard case .http(let http) = record, http.process == "nginx", http.target == "/file.bin" else { return nil }
      return http
    }
    #expect(served.count == 1)
    #expect((served.first?.responseBytes ?? 0) > 50_000, "the body went out with sendfile64")
    #expect(served.first?.status == 200)
  }

  @Test("death by a signal is reported as a shell does: 128 + N and the signal's name")
  func signalDeath() throws {
    let (elfhook, _) = try Self.products()
    let run = try ProgramRun.run([elfhook, "run", "--", "sh", "-c", "kill -KILL $$"])
    #expect(run.status == 128 + SIGKILL)
    #expect(run.stderr.contains("Killed"))
  }

  @Test("not a program: not found exits 127, a directory 126, a script without #! runs under sh; --help helps")
  func commandNotFound() throws {
    let (elfhook, _) = try Self.products()
    let run = try ProgramRun.run([elfhook, "run", "--", "no-such-command-elfhook"])
    #expect(run.status == 127)
    #expect(run.stderr == "elfhook: no-such-command-elfhook: command not found\n")
    // A script whose interpreter is missing is there: what is missing is said, as a shell says it.
    let scripts = try TemporaryDirectory("injection")
    defer { scripts.remove() }
    let orphanScript = scripts.file("orphan-script")
    try "#!/nonexistent/interpreter\n".write(to: orphanScript, atomically: true, encoding: .utf8)
    chmod(orphanScript.path, 0o755)
    let orphan = try ProgramRun.run([elfhook, "run", "--", orphanScript.path])
    #expect(orphan.status == 127)
    #expect(orphan.stderr.hasPrefix("elfhook: \(orphanScript.path): cannot execute: required file not found"), "\(orphan.stderr)")
    // Not a program: a directory is refused as a shell refuses it; a script without `#!` runs
    // under /bin/sh, as a shell runs it.
    let directory = try ProgramRun.run([elfhook, "run", "--", "/etc"])
    #expect(directory.status == 126)
    #expect(directory.stderr == "elfhook: /etc: Permission denied\n")
    let scratch = try TemporaryDirectory("injection")
    defer { scratch.remove() }
    let script = scratch.file("no-shebang")
    try "echo from-script \"$1\"\nexit 4\n".write(to: script, atomically: true, encoding: .utf8)
    chmod(script.path, 0o755)
    let plain = try ProgramRun.run([elfhook, "run", "--", script.path, "argument"])
    #expect(plain.status == 4)
    #expect(plain.stdout == Data("from-script argument\n".utf8))
    // The command is captured verbatim; --help in its place still asks for help.
    let help = try ProgramRun.run([elfhook, "run", "--help"])
    #expect(help.status == 0)
    #expect(String(decoding: help.stdout, as: UTF8.self).contains("USAGE: elfhook run"))
  }

  @Test("two curls under one sh give http records from two processes, merged into one file")
  func twoProcesses() throws {
    let (elfhook, _) = try Self.products()
    let server = try LoopbackServer()
    let scratch = try TemporaryDirectory("injection")
    defer { scratch.remove() }
    let output = scratch.file("records.jsonl")
    let url = "http://127.0.0.1:\(server.port)"
    let run = try ProgramRun.run([
      elfhook, "run", "--output", output.path, "--", "sh", "-c",
      "curl -sf -o /dev/null \(url)/bytes/1000 && curl -sf -o /dev/null \(url)/bytes/2000",
    ])
    #expect(run.status == 0, "\(run.stderr)")
    let attributes = try FileManager.default.attributesOfItem(atPath: output.path)
    #expect((attributes[.posixPermissions] as? Int) == 0o600)
    let http = Self.httpRecords(try Self.records(in: output), port: server.port)
    #expect(http.count == 2)
    #expect(Set(http.map(\.pid)).count == 2)
    #expect(http.allSatisfy { $0.process == "curl" && $0.status == 200 })
    #expect(Set(http.map(\.target)) == ["/bytes/1000", "/bytes/2000"])
    #expect(run.stderr.contains("127.0.0.1:\(server.port)"), "the summary names the host: \(run.stderr)")
  }

  @Test("--format jsonl streams records to stderr; --live redraws a compact view while it runs")
  func formatsAndLiveView() throws {
    let (elfhook, _) = try Self.products()
    let server = try LoopbackServer()
    let url = "http://127.0.0.1:\(server.port)/bytes/64"
    let jsonl = try ProgramRun.run([elfhook, "run", "--format", "jsonl", "--", "curl", "-sf", "-o", "/dev/null", url])
    #expect(jsonl.status == 0)
    let records = try jsonl.stderr.split(separator: "\n").map { try Transaction(jsonLine: String($0)) }
    #expect(Self.httpRecords(records, port: server.port).map(\.target) == ["/bytes/64"])
    let live = try ProgramRun.run([
      elfhook, "run", "--live", "--", "sh", "-c", "curl -sf -o /dev/null \(url); sleep 2.5; curl -sf -o /dev/null \(url)",
    ])
    #expect(live.status == 0)
    // Not a terminal: each refresh is appended, and the first ones already count the first request.
    let views = live.stderr.components(separatedBy: "\n").filter { $0.contains("127.0.0.1:\(server.port)") }
    #expect(views.count >= 3, "\(live.stderr)")
  }

  @Test("a python loop of 20 requests that SIGKILLs itself leaves 20 records")
  func killedProcessKeepsItsRecords() throws {
    let (elfhook, _) = try Self.products()
    let server = try LoopbackServer()
    let scratch = try TemporaryDirectory("injection")
    defer { scratch.remove() }
    let output = scratch.file("records.jsonl")
    let program = """
      import http.client, os, signal
      for i in range(20):
          c = http.client.HTTPConnection("127.0.0.1", \(server.port))
          c.request("GET", "/bytes/%d" % (100 + i))
          c.getresponse().read()
          c.close()
      os.kill(os.getpid(), signal.SIGKILL)
      """
    let run = try ProgramRun.run([elfhook, "run", "--output", output.path, "--", "python3", "-c", program])
    #expect(run.status == 128 + SIGKILL)
    let records = try Self.records(in: output)
    let http = Self.httpRecords(records, port: server.port)
    #expect(http.count == 20)
    #expect(Set(http.map(\.target)) == Set((0..<20).map { "/bytes/\(100 + $0)" }))
    #expect(http.allSatisfy { $0.responseBytes > 100 })
    #expect(Self.connectionRecords(records, port: server.port).count == 20)
  }

  @Test("a process the command leaves running in the background is waited for, and its records merged")
  func backgroundDescendant() throws {
    let (elfhook, _) = try Self.products()
    let server = try LoopbackServer()
    let scratch = try TemporaryDirectory("injection")
    defer { scratch.remove() }
    let output = scratch.file("records.jsonl")
    // sh exits at once, exit 3; its background child connects 0.3 s later, orphaned.
    let script = "(sleep 0.3; curl -s -o /dev/null http://127.0.0.1:\(server.port)/bytes/5) & exit 3"
    let run = try ProgramRun.run([elfhook, "run", "--output", output.path, "--", "sh", "-c", script])
    #expect(run.status == 3, "the command's status, not the leftover's: \(run.stderr)")
    #expect(Self.httpRecords(try Self.records(in: output), port: server.port).map(\.target) == ["/bytes/5"])
    #expect(run.stderr.contains("waiting for the processes it left running"))
  }

  @Test("a process left running after elfhook run stopped waiting says nothing of the run's removed directory")
  func survivorStaysQuiet() throws {
    let (elfhook, _) = try Self.products()
    let server = try LoopbackServer()
    let scratch = try TemporaryDirectory("injection")
    defer { scratch.remove() }
    let survivorOutput = scratch.file("survivor.txt")
    let runErrors = scratch.file("run-stderr.txt")
    let go = scratch.file("go")
    // The survivor, once the run has ended: a python3 started then (its constructor), one already
    // loaded that connects then (its monitor), and a child it forks then (the fork handler). It
    // waits for `go`, which the test makes once elfhook has exited: no step hangs on a sleep. As a
    // daemon does, it closes what it inherited, among which the socket by which Foundation's
    // `Process` learns that elfhook exited.
    let url = "http://127.0.0.1:\(server.port)/bytes/5"
    let program = """
      import os, time, urllib.request
      os.closerange(3, 65536)
      deadline = time.time() + 60
      while not os.path.exists("\(go.path)") and time.time() < deadline: time.sleep(0.02)
      urllib.request.urlopen("\(url)").read()
      if os.fork() == 0:
          urllib.request.urlopen("\(url)").read()
          os._exit(0)
      os.wait()
      os.system("curl -s -o /dev/null \(url) && echo fetched")
      """
    let script = "(exec python3 -c '\(program)' >\(survivorOutput.path) 2>&1) & exit 0"
    let run = try SpawnedProgram([elfhook, "run", "--", "sh", "-c", script], stderr: runErrors)
    // SIGTERM ends the wait only once the command has exited and elfhook waits for its leftovers.
    let waiting = eventually(timeout: 30) {
      ((try? String(contentsOf: runErrors, encoding: .utf8)) ?? "").contains("waiting for the processes it left running")
    }
    try #require(waiting, "elfhook run never waited for the leftover python3")
    try #require(run.stop(with: SIGTERM, timeout: 30) != nil, "elfhook run kept waiting after SIGTERM")
    try #require(FileManager.default.createFile(atPath: go.path, contents: nil))
    var text = ""
    _ = eventually(timeout: 30) {
      text = (try? String(contentsOf: survivorOutput, encoding: .utf8)) ?? ""
      return text.contains("fetched")
    }
    #expect(text == "fetched\n")
  }

  @Test("a dual-stack socket connecting to an IPv4-mapped address gets the lookup's host and time")
  func mappedAddress() throws {
    let (elfhook, _) = try Self.products()
    let server = try LoopbackServer()
    let scratch = try TemporaryDirectory("injection")
    defer { scratch.remove() }
    let output = scratch.file("records.jsonl")
    // As Java connects: an AF_INET6 socket to ::ffff:127.0.0.1 for the lookup's 127.0.0.1.
    let program = """
      import socket
      address = socket.getaddrinfo("localhost", \(server.port), socket.AF_INET, socket.SOCK_STREAM)[0][4][0]
      s = socket.socket(socket.AF_INET6)
      s.connect(("::ffff:" + address, \(server.port)))
      s.sendall(b"GET /bytes/3 HTTP/1.1\\r\\nHost: localhost\\r\\nConnection: close\\r\\n\\r\\n")
      while s.recv(4096): pass
      s.close()
      """
    let run = try ProgramRun.run([elfhook, "run", "--output", output.path, "--", "python3", "-c", program])
    #expect(run.status == 0, "\(run.stderr)")
    let connection = try #require(Self.connectionRecords(try Self.records(in: output), port: server.port).first)
    #expect(connection.peerAddress == "::ffff:127.0.0.1")
    #expect(connection.host == "localhost")
    #expect(connection.dnsMs != nil)
  }

  @Test("a forked child records into a ring of its own, without the parent's connections")
  func forkedChild() throws {
    let (elfhook, _) = try Self.products()
    let server = try LoopbackServer()
    let scratch = try TemporaryDirectory("injection")
    defer { scratch.remove() }
    let output = scratch.file("records.jsonl")
    // The parent opens a connection before the fork and closes it after: only the parent's
    // record may carry it. The child makes one request of its own.
    let program = """
      import http.client, os
      def get(path):
          c = http.client.HTTPConnection("127.0.0.1", \(server.port))
          c.request("GET", path)
          c.getresponse().read()
          return c
      shared = get("/bytes/11")
      pid = os.fork()
      if pid == 0:
          get("/bytes/22").close()
          shared.close()
          os._exit(0)
      os.waitpid(pid, 0)
      shared.close()
      """
    let run = try ProgramRun.run([elfhook, "run", "--output", output.path, "--", "python3", "-c", program])
    #expect(run.status == 0, "\(run.stderr)")
    let records = try Self.records(in: output)
    let http = Self.httpRecords(records, port: server.port)
    let parent = try #require(http.first { $0.target == "/bytes/11" })
    let child = try #require(http.first { $0.target == "/bytes/22" })
    #expect(parent.pid != child.pid)
    let connections = Self.connectionRecords(records, port: server.port)
    #expect(connections.filter { $0.pid == parent.pid }.count == 1)
    #expect(connections.filter { $0.pid == child.pid }.count == 1, "the child's own connection only")
  }

  @Test("a child that goes on with its parent's keep-alive connection: its exchanges carry its own pid")
  func forkedChildGoesOnWithConnection() throws {
    let (elfhook, _) = try Self.products()
    let server = try LoopbackServer()
    let scratch = try TemporaryDirectory("injection")
    defer { scratch.remove() }
    let output = scratch.file("records.jsonl")
    // Four exchanges in the parent arm the hooks' replay on the connection (the forking thread is
    // the child's only one); the child's three must not be recorded from the parent's template.
    let program = """
      import http.client, os
      connection = http.client.HTTPConnection("127.0.0.1", \(server.port))
      def get(path):
          connection.request("GET", path)
          connection.getresponse().read()
      for size in (10, 11, 12, 13):
          get(f"/bytes/{size}")
      pid = os.fork()
      if pid == 0:
          for size in (20, 21, 22):
              get(f"/bytes/{size}")
          os._exit(0)
      os.waitpid(pid, 0)
      """
    let run = try ProgramRun.run([elfhook, "run", "--output", output.path, "--", "python3", "-c", program])
    #expect(run.status == 0, "\(run.stderr)")
    let http = Self.httpRecords(try Self.records(in: output), port: server.port)
    let parent = http.filter { ["/bytes/10", "/bytes/11", "/bytes/12", "/bytes/13"].contains($0.target) }
    let child = http.filter { ["/bytes/20", "/bytes/21", "/bytes/22"].contains($0.target) }
    try #require(parent.count == 4 && child.count == 3, "\(http.map(\.target))")
    let parentPid = try #require(parent.first?.pid)
    #expect(parent.allSatisfy { $0.pid == parentPid })
    #expect(child.allSatisfy { $0.pid != parentPid && $0.status == 200 && $0.reusedConnection }, "\(child)")
    #expect(Set(child.map(\.pid)).count == 1)
  }

  @Test("a server that accepts and forks: each connection recorded once, by the child that served it")
  func forkPerConnectionServer() throws {
    let (elfhook, _) = try Self.products()
    let scratch = try TemporaryDirectory("injection")
    defer { scratch.remove() }
    let output = scratch.file("records.jsonl")
    let program = """
      import http.server, socketserver, os, sys, threading
      class Handler(http.server.BaseHTTPRequestHandler):
          protocol_version = "HTTP/1.1"
          def log_message(self, *args): pass
          def do_GET(self):
              body = b"x" * 10
              self.send_response(200)
              self.send_header("Content-Length", "10")
              self.end_headers()
              self.wfile.write(body)
      class Server(socketserver.ForkingMixIn, http.server.HTTPServer): pass
      server = Server(("127.0.0.1", 0), Handler)
      print("PID", os.getpid(), flush=True)
      print("PORT", server.server_address[1], flush=True)
      threading.Thread(target=lambda: (sys.stdin.read(), server.shutdown()), daemon=True).start()
      server.serve_forever()
      """
    let run = try SpawnedProgram([elfhook, "run", "--output", output.path, "--", "python3", "-c", program])
    let parentPid = try #require(run.readLine(timeout: 20).flatMap { Int32($0.dropFirst(4)) })
    let port = try #require(run.port(timeout: 20))
    _ = try ProgramRun.run(["curl", "-sf", "-o", "/dev/null", "-o", "/dev/null",
                            "http://127.0.0.1:\(port)/a", "http://127.0.0.1:\(port)/b"])
    _ = try ProgramRun.run(["curl", "-sf", "-o", "/dev/null", "http://127.0.0.1:\(port)/c"])
    run.closeInput()
    run.process.waitUntilExit()
    let records = try Self.records(in: output)
    let served = records.compactMap { record -> HTTPRecord? in
      guard case .http(let http) = record, http.role == .server else { return nil }
      return http
    }
    #expect(served.map(\.target).sorted() == ["/a", "/b", "/c"])
    #expect(served.allSatisfy { $0.status == 200 && $0.responseComplete == true })
    let accepted = records.compactMap { record -> ConnectionRecord? in
      guard case .connection(let connection) = record, connection.role == .server else { return nil }
      return connection
    }
    // The children's records carry the bytes and the exchanges; the parent's copies moved none,
    // and, open at the fork that handed them over, are not recorded at all (`forked_open`).
    let children = accepted.filter { $0.bytesReceived > 0 }
    #expect(children.count == 2 && children.allSatisfy { $0.pid != parentPid })
    #expect(accepted.filter { $0.pid == parentPid }.allSatisfy { $0.bytesReceived == 0 && $0.bytesSent == 0 })
    #expect(accepted.count == children.count, "each connection once: \(accepted)")
    #expect(children.map { $0.httpExchanges ?? 0 }.sorted() == [1, 2])
    #expect(Set(served.map(\.pid)) == Set(children.map(\.pid)))
  }

  @Test("under env -i with a bare LD_PRELOAD: no toolchain, no libelf, records in the ring")
  func bareEnvironment() throws {
    let (_, library) = try Self.products()
    let needed = try ProgramRun.run(["readelf", "-dW", library])
    let neededText = String(decoding: needed.stdout, as: UTF8.self)
    #expect(!neededText.contains("libswift"))
    #expect(!neededText.contains("libelf"))
    #expect(!neededText.contains("libFoundation"))
    let server = try LoopbackServer()
    let scratch = try TemporaryDirectory("injection")
    defer { scratch.remove() }
    let run = try ProgramRun.run(
      ["/usr/bin/env", "-i", "LD_PRELOAD=\(library)", "ELFHOOK_OUTPUT=\(scratch.url.path)/%p.ring",
       "/usr/bin/curl", "-sf", "-o", "/dev/null", "http://127.0.0.1:\(server.port)/bytes/321"])
    #expect(run.status == 0)
    #expect(run.stderr.isEmpty, "\(run.stderr)")
    let rings = try FileManager.default.contentsOfDirectory(atPath: scratch.url.path)
    #expect(rings.count == 1)
    let path = scratch.file(try #require(rings.first)).path
    let attributes = try FileManager.default.attributesOfItem(atPath: path)
    #expect((attributes[.posixPermissions] as? Int) == 0o600)
    // `elfhook report` reads the ring where it lies and leaves the records in it.
    let report = try ProgramRun.run([try Self.products().elfhook, "report", "--waterfall", path])
    #expect(report.status == 0, "\(report.stderr)")
    #expect(String(decoding: report.stdout, as: UTF8.self).contains("/bytes/321"))
    let ring = try RecordRing(path: path)
    #expect(ring.process == "curl")
    var records: [Transaction] = []
    ring.drain(skippingUnfinished: true) { records.append($0) }
    let http = Self.httpRecords(records, port: server.port)
    #expect(http.map(\.target) == ["/bytes/321"])
    #expect(http.first?.pid == ring.pid)
  }

  @Test("ELFHOOK_DISABLE=1 injects but records nothing; bad configuration is one line and no change")
  func configuration() throws {
    let (_, library) = try Self.products()
    let scratch = try TemporaryDirectory("injection")
    defer { scratch.remove() }
    let script = "echo out; exit 3"
    let base = ["/usr/bin/env", "-i", "LD_PRELOAD=\(library)", "ELFHOOK_OUTPUT=\(scratch.url.path)/%p.ring"]
    let disabled = try ProgramRun.run(base + ["ELFHOOK_DISABLE=1", "/bin/sh", "-c", script])
    #expect(disabled.status == 3 && disabled.stdout == Data("out\n".utf8) && disabled.stderr.isEmpty)
    #expect(try FileManager.default.contentsOfDirectory(atPath: scratch.url.path).isEmpty)
    for bad in ["ELFHOOK_DISABLE=yes", "ELFHOOK_LOG=loud", "ELFHOOK_BUFFER_RECORDS=1000", "ELFHOOK_OUTPUT="] {
      let run = try ProgramRun.run(base + [bad, "/bin/sh", "-c", script])
      #expect(run.status == 3, "\(bad)")
      #expect(run.stdout == Data("out\n".utf8), "\(bad)")
      let lines = run.stderr.split(separator: "\n")
      #expect(lines.count == 1, "\(bad): \(run.stderr)")
      #expect(lines.first?.hasPrefix("elfhook: ") == true && lines.first?.hasSuffix("runs unmonitored") == true)
    }
    let unwritable = try ProgramRun.run(
      ["/usr/bin/env", "-i", "LD_PRELOAD=\(library)", "ELFHOOK_OUTPUT=/nonexistent-dir/%p.ring", "/bin/sh", "-c", script])
    #expect(unwritable.status == 3 && unwritable.stdout == Data("out\n".utf8))
    #expect(unwritable.stderr.contains("/nonexistent-dir/") && unwritable.stderr.contains("No such file or directory"))
    #expect(!unwritable.stderr.contains("%p"), "the path is named as the ring's would be: \(unwritable.stderr)")
    // Where a directory or a device (a FIFO here, /dev/null) has the ring's name, the ring is not
    // made beside it as `NAME.1`: the process says so, once, and runs unmonitored. A connect
    // starts the monitor, whose line names elfhook only.
    let fifo = scratch.file("fifo.ring")
    try #require(mkfifo(fifo.path, 0o600) == 0)
    let port = try Sockets.unusedPort()
    let connects = "import socket; socket.socket().connect_ex((\"127.0.0.1\", \(port))); print(\"out\")"
    for (output, reason) in [(scratch.url.path, "Is a directory"), (fifo.path, "File exists")] {
      let run = try ProgramRun.run(
        ["/usr/bin/env", "-i", "LD_PRELOAD=\(library)", "ELFHOOK_OUTPUT=\(output)", "/usr/bin/python3", "-c", connects])
      #expect(run.status == 0 && run.stdout == Data("out\n".utf8))
      #expect(run.stderr.hasPrefix("elfhook: cannot create the record file \(output): \(reason); python3["), "\(run.stderr)")
      #expect(run.stderr.split(separator: "\n").count == 1, "\(run.stderr)")
      #expect(!FileManager.default.fileExists(atPath: output + ".1"))
    }
  }

  @Test("SIGTERM sent to elfhook reaches the command, whose exit status comes back")
  func forwardsSigterm() throws {
    let (elfhook, _) = try Self.products()
    let scratch = try TemporaryDirectory("injection")
    defer { scratch.remove() }
    let ready = scratch.file("ready")
    let program = """
      import signal, sys, time
      signal.signal(signal.SIGTERM, lambda *a: sys.exit(42))
      open("\(ready.path)", "w").close()
      time.sleep(30)
      """
    let process = Process()
    process.executableURL = URL(fileURLWithPath: elfhook)
    process.arguments = ["run", "--", "python3", "-c", program]
    process.standardOutput = FileHandle.nullDevice
    process.standardError = FileHandle.nullDevice
    try process.run()
    for _ in 0..<500 where !FileManager.default.fileExists(atPath: ready.path) { usleep(10_000) }
    #expect(FileManager.default.fileExists(atPath: ready.path))
    kill(process.processIdentifier, SIGTERM)
    process.waitUntilExit()
    #expect(process.terminationStatus == 42)
  }

  @Test("a statically linked command still runs, with one line saying it is not monitored")
  func staticCommand() throws {
    let (elfhook, _) = try Self.products()
    let scratch = try TemporaryDirectory("injection")
    defer { scratch.remove() }
    let binary = try Self.compile(
      "#include <stdio.h>\nint main(void) { puts(\"static hello\"); return 5; }\n", named: "hello-static",
      in: scratch, flags: ["-static"])
    let run = try ProgramRun.run([elfhook, "run", "--", binary.path])
    #expect(run.status == 5)
    #expect(run.stdout == Data("static hello\n".utf8))
    #expect(run.stderr.contains("is statically linked"))
    #expect(run.stderr.contains("runs unmonitored"))
  }

  @Test("a Go program runs monitored, with one line saying its connections are not seen; a static one unmonitored")
  func goProgram() throws {
    let (elfhook, _) = try Self.products()
    let scratch = try TemporaryDirectory("injection")
    defer { scratch.remove() }
    let source = try String(
      contentsOf: BuiltProducts.packageRoot.appendingPathComponent("Tests/Fixtures/go_note.c"), encoding: .utf8)
    let dynamic = try ProgramRun.run([elfhook, "run", "--", try Self.compile(source, named: "go-like", in: scratch).path])
    #expect(dynamic.status == 3)
    #expect(dynamic.stdout == Data("go-like hello\n".utf8))
    #expect(dynamic.stderr.contains("is a Go program: Go makes its system calls itself"))
    #expect(!dynamic.stderr.contains("runs unmonitored"))
    let binary = try Self.compile(source, named: "go-like-static", in: scratch, flags: ["-static"])
    let fixed = try ProgramRun.run([elfhook, "run", "--", binary.path])
    #expect(fixed.status == 3)
    #expect(fixed.stderr.contains("is a statically linked Go program"))
    #expect(fixed.stderr.contains("runs unmonitored"))
  }

  @Test("--output refuses a symbolic link and another user's file, before running anything")
  func outputFileSafety() throws {
    let (elfhook, _) = try Self.products()
    let scratch = try TemporaryDirectory("injection")
    defer { scratch.remove() }
    let target = scratch.file("victim")
    try "precious\n".write(to: target, atomically: true, encoding: .utf8)
    let link = scratch.file("link.jsonl")
    try FileManager.default.createSymbolicLink(at: link, withDestinationURL: target)
    let marker = scratch.file("ran")
    let viaLink = try ProgramRun.run([elfhook, "run", "--output", link.path, "--", "touch", marker.path])
    #expect(viaLink.status == 1)
    #expect(viaLink.stderr.contains("symbolic link"))
    #expect(try String(contentsOf: target, encoding: .utf8) == "precious\n")
    #expect(!FileManager.default.fileExists(atPath: marker.path))
    if geteuid() == 0 {
      chown(target.path, 65534, 65534)
      let foreign = try ProgramRun.run([elfhook, "run", "--output", target.path, "--", "true"])
      #expect(foreign.status == 1)
      #expect(foreign.stderr.contains("belongs to user 65534"))
      #expect(try String(contentsOf: target, encoding: .utf8) == "precious\n")
    }
    // A file of one's own is replaced, as `>` does, and left mode 0600 whatever it was.
    let own = scratch.file("own.jsonl")
    try "old\n".write(to: own, atomically: true, encoding: .utf8)
    chmod(own.path, 0o644)
    let replaced = try ProgramRun.run([elfhook, "run", "--output", own.path, "--", "true"])
    #expect(replaced.status == 0)
    #expect(try Data(contentsOf: own).isEmpty)
    var status = stat()
    #expect(stat(own.path, &status) == 0 && status.st_mode & 0o777 == 0o600)
  }
}
