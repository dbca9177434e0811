import Foundation
import Testing
import TestSupport

@testable import NetMonitor

/// A client that sends on one thread and reads on another (Java's HttpClient, NIO clients), with
/// the interleaving that used to pair each response with the wrong request made certain: the
/// request's thread is held between its send() and the hook's parse until the other thread has
/// read the whole response (Support/split_thread_client.c, Support/hold_send.c).
@Suite("A client that sends and receives on two threads", .serialized)
struct SplitThreadClientTests {
  @Test("every response is recorded with its own request, when it is read before the request's hook ran")
  func responsesMeetTheirRequests() throws {
    let (elfhook, _) = try InjectionTests.products()
    let server = try LoopbackServer()
    let scratch = try TemporaryDirectory("injection")
    defer { scratch.remove() }
    let support = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Support")
    let library = scratch.file("libhold.so")
    let client = scratch.file("split_thread_client")
    for command in [
      ["-shared", "-fPIC", "-o", library.path, support.appendingPathComponent("hold_send.c").path, "-ldl"],
      ["-pthread", "-o", client.path, support.appendingPathComponent("split_thread_client.c").path,
       "-L", scratch.url.path, "-lhold", "-Wl,-rpath," + scratch.url.path],
    ] {
      let build = try ProgramRun.run(["cc", "-Wall", "-Werror"] + command)
      try #require(build.status == 0, "cc: \(build.stderr)")
    }
    // More exchanges than a connection has slots (8), sizes far enough apart that a response
    // paired with the next request cannot pass for its own; two HEADs, whose responses announce
    // a body they do not carry (the response is read before the request says it was a HEAD).
    let sizes = (1...12).map { $0 * 1000 }
    let heads: Set = [4000, 9000]
    let arguments = sizes.map { (heads.contains($0) ? "h" : "") + String($0) }
    let output = scratch.file("records.jsonl")
    let run = try ProgramRun.run(
      [elfhook, "run", "--output", output.path, "--", client.path, String(server.port)] + arguments)
    #expect(run.status == 0, "\(run.stderr)")
    let printed = String(decoding: run.stdout, as: UTF8.self)
    #expect(printed == "ok \(sizes.count)\n", "the client read every response: \(printed)")

    let records = try InjectionTests.records(in: output)
    let http = InjectionTests.httpRecords(records, port: server.port)
    #expect(http.map(\.target) == sizes.map { "/bytes/\($0)" })
    for (record, size) in zip(http, sizes) {
      let isHEAD = heads.contains(size)
      #expect(record.method == (isHEAD ? "HEAD" : "GET"))
      // The status line and headers the Python server sends: ~150 bytes.
      let headers = Int(record.responseBytes) - (isHEAD ? 0 : size)
      #expect((100...400).contains(headers), "\(record.target): \(record.responseBytes) bytes for \(size)")
      let request = "\(record.method) /bytes/\(size) HTTP/1.1\r\nHost: 127.0.0.1:\(server.port)\r\n\r\n"
      #expect(record.requestBytes == UInt64(request.utf8.count))
      #expect(record.status == 200)
      #expect(record.durationMs >= 0 && (record.ttfbMs ?? 0) <= record.durationMs)
    }
    #expect(InjectionTests.connectionRecords(records, port: server.port).map(\.httpExchanges) == [Optional(sizes.count)])
  }
}
