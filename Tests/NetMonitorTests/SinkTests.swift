import Foundation
import Synchronization
import TestSupport
import Testing

@testable import NetMonitor

/// Replacement system calls for `JSONLinesSink`: a scripted list of outcomes for `write`, and
/// the bytes that were "written".
final class ScriptedWrites: Sendable {
  enum Step: Sendable {
    /// Fail with this errno.
    case fail(Int32)
    /// Accept at most this many bytes.
    case accept(Int)
  }

  private let state = Mutex<(script: [Step], output: [UInt8], calls: Int)>(([], [], 0))

  init(_ script: [Step]) {
    state.withLock { $0.script = script }
  }

  var output: String { state.withLock { String(decoding: $0.output, as: UTF8.self) } }
  var calls: Int { state.withLock { $0.calls } }

  /// After the script runs out, every write succeeds completely.
  var systemCalls: SinkSystemCalls {
    SinkSystemCalls(
      write: { [self] _, buffer in
        state.withLock { state in
          state.calls += 1
          let step = state.script.isEmpty ? .accept(Int.max) : state.script.removeFirst()
          switch step {
          case .fail(let code):
            return (-1, code)
          case .accept(let limit):
            let count = min(limit, buffer.count)
            state.output.append(contentsOf: buffer[0..<count])
            return (count, 0)
          }
        }
      },
      close: { _ in 0 })
  }
}

@Suite("Sinks")
struct SinkTests {
  // MARK: - In-memory, multiplex, no-op

  @Test("InMemorySink keeps order and filters by kind, under concurrent recording")
  func inMemory() async {
    let sink = InMemorySink()
    for transaction in RecordSamples.all { sink.record(transaction) }
    #expect(sink.transactions == RecordSamples.all)
    #expect(sink.dns == [RecordSamples.dns, RecordSamples.dnsFailure])
    #expect(sink.connections == [RecordSamples.connection, RecordSamples.refused])
    #expect(sink.http == [RecordSamples.http])
    sink.removeAll()
    #expect(sink.count == 0)

    await withTaskGroup(of: Void.self) { group in
      for _ in 0..<8 {
        group.addTask {
          for _ in 0..<500 { sink.record(.http(RecordSamples.http)) }
        }
      }
    }
    #expect(sink.http.count == 4000)
  }

  final class FlushCounter: TransactionSink {
    let flushes = Atomic<Int>(0)
    let records = Atomic<Int>(0)
    func record(_ transaction: Transaction) { records.add(1, ordering: .relaxed) }
    func flush() { flushes.add(1, ordering: .relaxed) }
  }

  @Test("MultiplexSink forwards records and flushes to every sink; NoOpSink drops")
  func multiplex() {
    let memory = InMemorySink()
    let counter = FlushCounter()
    let sink = MultiplexSink([memory, NoOpSink(), counter])
    for transaction in RecordSamples.all { sink.record(transaction) }
    sink.flush()
    #expect(memory.transactions == RecordSamples.all)
    #expect(counter.records.load(ordering: .relaxed) == RecordSamples.all.count)
    #expect(counter.flushes.load(ordering: .relaxed) == 1)
    // The default flush does nothing (and exists).
    memory.flush()
    NoOpSink().record(.dns(RecordSamples.dns))
  }

  // MARK: - JSONLinesSink on real files

  @Test("8 threads × 2000 records: whole lines, exact count, every line parses")
  func concurrentWholeLines() throws {
    let directory = try TemporaryDirectory("sink", inSharedMemory: false)
    defer { directory.remove() }
    let path = directory.path("records.jsonl")
    let sink = try JSONLinesSink(path: path)
    let threads = 8
    let perThread = 2000
    DispatchQueue.concurrentPerform(iterations: threads) { thread in
      for index in 0..<perThread {
        var record = RecordSamples.connection
        record.id = UInt64(thread * perThread + index)
        record.process = "thread \(thread) \"quoted\"\n"
        sink.record(.connection(record))
      }
    }
    #expect(sink.recordsWritten == threads * perThread)
    #expect(sink.writeFailures == 0)
    let text = try String(contentsOfFile: path, encoding: .utf8)
    #expect(text.hasSuffix("\n"))
    let lines = text.split(separator: "\n", omittingEmptySubsequences: false).dropLast()
    #expect(lines.count == threads * perThread)
    var ids = Set<UInt64>()
    for line in lines {
      _ = try RecordSamples.foundationObject(String(line))
      guard case .connection(let record) = try Transaction(jsonLine: String(line)) else {
        Issue.record("not a connection: \(line)")
        continue
      }
      ids.insert(record.id)
    }
    #expect(ids.count == threads * perThread)
  }

  @Test("the file is created with mode 0600 and appended to, never truncated")
  func createdPrivate() throws {
    let directory = try TemporaryDirectory("sink", inSharedMemory: false)
    defer { directory.remove() }
    let path = directory.path("private.jsonl")
    do {
      let sink = try JSONLinesSink(path: path)
      sink.record(.dns(RecordSamples.dns))
    }
    var info = stat()
    #expect(stat(path, &info) == 0)
    #expect(info.st_mode & 0o777 == 0o600)
    #expect((info.st_mode & S_IFMT) == S_IFREG)
    let second = try JSONLinesSink(path: path)
    second.record(.http(RecordSamples.http))
    second.close()
    let lines = try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n")
    #expect(lines.count == 2)
    #expect(
      try lines.map { try Transaction(jsonLine: String($0)) } == [
        .dns(RecordSamples.dns), .http(RecordSamples.http),
      ])
  }

  @Test("a symbolic link at the path is refused (O_NOFOLLOW), naming the path")
  func refusesSymlink() throws {
    let directory = try TemporaryDirectory("sink", inSharedMemory: false)
    defer { directory.remove() }
    let target = directory.path("victim")
    _ = FileManager.default.createFile(atPath: target, contents: Data("keep\n".utf8))
    let link = directory.path("link.jsonl")
    try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: target)
    do {
      _ = try JSONLinesSink(path: link)
      Issue.record("opened a symbolic link")
    } catch {
      #expect(error.errno == ELOOP)
      #expect(error.call == "open")
      #expect(error.path == link)
      #expect(error.description.contains(link))
      #expect(error.description.contains("ELOOP"))
    }
    #expect(try String(contentsOfFile: target, encoding: .utf8) == "keep\n")
  }

  @Test("a missing directory throws a readable error")
  func missingDirectory() {
    #expect {
      _ = try JSONLinesSink(path: "/nonexistent-netmonitor-dir/x.jsonl")
    } throws: { error in
      guard let error = error as? SinkError else { return false }
      return error.errno == ENOENT
        && error.description
          == #"open("/nonexistent-netmonitor-dir/x.jsonl"): No such file or directory (ENOENT)"#
    }
  }

  @Test("/dev/full: every write fails with ENOSPC and is counted, nothing traps")
  func deviceFull() throws {
    let sink = try JSONLinesSink(path: "/dev/full")
    for transaction in RecordSamples.all { sink.record(transaction) }
    #expect(sink.writeFailures == RecordSamples.all.count)
    #expect(sink.recordsWritten == 0)
    #expect(sink.lastWriteError?.errno == ENOSPC)
    #expect(sink.lastWriteError?.path == "/dev/full")
  }

  @Test("a descriptor that is not open: EBADF, counted")
  func badDescriptor() {
    // Far above any descriptor limit, so it cannot be open (and is not another test's file).
    let sink = JSONLinesSink(fileDescriptor: 1 << 29)
    sink.record(.dns(RecordSamples.dns))
    #expect(sink.writeFailures == 1)
    #expect(sink.lastWriteError?.errno == EBADF)
  }

  @Test("after close(), records are counted as failures (EBADF); close twice is fine")
  func closed() throws {
    let directory = try TemporaryDirectory("sink", inSharedMemory: false)
    defer { directory.remove() }
    let sink = try JSONLinesSink(path: directory.path("closed.jsonl"))
    sink.record(.dns(RecordSamples.dns))
    sink.close()
    sink.close()
    sink.record(.dns(RecordSamples.dns))
    #expect(sink.recordsWritten == 1)
    #expect(sink.writeFailures == 1)
    #expect(sink.lastWriteError?.errno == EBADF)
  }

  @Test("a pipe whose reader is gone: EPIPE counted, no SIGPIPE for the host")
  func brokenPipe() {
    var ends: [Int32] = [0, 0]
    #expect(pipe(&ends) == 0)
    close(ends[0])
    let sink = JSONLinesSink(fileDescriptor: ends[1], closeWhenDone: true)
    sink.record(.dns(RecordSamples.dns))
    sink.record(.dns(RecordSamples.dns))
    #expect(sink.writeFailures == 2)
    #expect(sink.lastWriteError?.errno == EPIPE)
    // No SIGPIPE is left pending on this thread either.
    var pending = sigset_t()
    sigemptyset(&pending)
    sigpending(&pending)
    #expect(sigismember(&pending, SIGPIPE) == 0)
  }

  @Test("a pipe with a reader gets whole lines")
  func pipeReader() throws {
    var ends: [Int32] = [0, 0]
    #expect(pipe(&ends) == 0)
    defer { close(ends[0]) }
    let sink = JSONLinesSink(fileDescriptor: ends[1], closeWhenDone: true)
    sink.record(.http(RecordSamples.http))
    sink.close()
    var buffer = [UInt8](repeating: 0, count: 4096)
    let count = read(ends[0], &buffer, buffer.count)
    let line = String(decoding: buffer[0..<max(0, count)], as: UTF8.self)
    #expect(line == Transaction.http(RecordSamples.http).jsonLine() + "\n")
  }

  // MARK: - JSONLinesSink with scripted system calls

  @Test("EINTR is retried and short writes are continued until the line is whole")
  func interruptedAndShort() {
    let writes = ScriptedWrites([.fail(EINTR), .accept(7), .fail(EINTR), .accept(1), .accept(50)])
    let sink = JSONLinesSink(
      fileDescriptor: 3, path: nil, ownsDescriptor: false, system: writes.systemCalls)
    sink.record(.connection(RecordSamples.connection))
    #expect(sink.writeFailures == 0)
    #expect(sink.recordsWritten == 1)
    #expect(writes.output == Transaction.connection(RecordSamples.connection).jsonLine() + "\n")
    #expect(writes.calls == 6)
  }

  @Test("a line cut short by an error is closed before the next record")
  func cutLineRecovery() throws {
    let writes = ScriptedWrites([.accept(10), .fail(ENOSPC)])
    let sink = JSONLinesSink(
      fileDescriptor: 3, path: "/x", ownsDescriptor: false, system: writes.systemCalls)
    sink.record(.dns(RecordSamples.dns))
    #expect(sink.writeFailures == 1)
    #expect(sink.lastWriteError == SinkError(call: "write", path: "/x", errno: ENOSPC))
    sink.record(.http(RecordSamples.http))
    #expect(sink.recordsWritten == 1)
    let lines = writes.output.split(separator: "\n", omittingEmptySubsequences: false)
    #expect(lines.count == 3)
    #expect(lines[0] == Transaction.dns(RecordSamples.dns).jsonLine().prefix(10))
    #expect(try Transaction(jsonLine: String(lines[1])) == .http(RecordSamples.http))
    #expect(lines[2].isEmpty)
  }

  @Test(
    "write errors are counted, not thrown",
    arguments: [EIO, ENOSPC, EDQUOT, EFBIG, EAGAIN, EBADF])
  func writeErrors(code: Int32) {
    let writes = ScriptedWrites([.fail(code)])
    let sink = JSONLinesSink(
      fileDescriptor: 3, path: nil, ownsDescriptor: false, system: writes.systemCalls)
    sink.record(.dns(RecordSamples.dns))
    sink.record(.dns(RecordSamples.dns))
    #expect(sink.writeFailures == 1)
    #expect(sink.recordsWritten == 1)
    #expect(sink.lastWriteError?.errno == code)
    #expect(writes.output == Transaction.dns(RecordSamples.dns).jsonLine() + "\n")
  }

  @Test("a write that returns 0 is an error (EIO), not an endless loop")
  func zeroWrite() {
    let writes = ScriptedWrites([.accept(0)])
    let sink = JSONLinesSink(
      fileDescriptor: 3, path: nil, ownsDescriptor: false, system: writes.systemCalls)
    sink.record(.dns(RecordSamples.dns))
    #expect(sink.writeFailures == 1)
    #expect(sink.lastWriteError?.errno == EIO)
  }
}
