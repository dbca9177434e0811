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
    let client = try Self.build("split_thread_client", in: scratch)
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

  /// An h2c upgrade whose 101 (and stream 1's answer) is read before the upgrade request's hook
  /// ran: the request direction switches to HTTP/2 only once it has read that request, and the
  /// server's size update to the HTTP2-Settings header's table is followed, though it comes
  /// before the header is read.
  @Test("an h2c upgrade answered before the request's hook ran: the 101 exchange, then each stream whole",
        arguments: ["1", "0"])
  func upgradeAnsweredFirst(lightClients: String) throws {
    let (elfhook, _) = try InjectionTests.products()
    let (server, port) = try HTTP2Tests.pythonServer()
    defer { server.closeInput() }
    let scratch = try TemporaryDirectory("injection")
    defer { scratch.remove() }
    let client = try Self.build("upgrade_client", in: scratch)
    let output = scratch.file("records.jsonl")
    let run = try ProgramRun.run([
      "/usr/bin/env", "ELFHOOK_LIGHT_CLIENTS=\(lightClients)", elfhook, "run", "--output", output.path, "--",
      client.path, String(port),
    ])
    #expect(run.status == 0 && String(decoding: run.stdout, as: UTF8.self) == "ok 2\n", "\(run.stderr)")
    let records = try InjectionTests.records(in: output)
    let http = HTTP2Tests.http(records).sorted { ($0.streamId ?? 0, $0.startUnixNs) < ($1.streamId ?? 0, $1.startUnixNs) }
    try #require(http.count == 3, "\(http)")
    #expect(http[0].httpProtocol == .http11 && http[0].status == 101 && http[0].target == "/first?size=100")
    #expect(http[1].httpProtocol == .h2 && http[1].streamId == 1 && http[1].method == "GET")
    #expect(http[1].target == "/first?size=100" && http[1].status == 200 && http[1].reusedConnection)
    #expect(http[2].streamId == 3 && http[2].target == "/second?size=200" && http[2].status == 200)
    #expect(http.dropFirst().allSatisfy { $0.responseComplete == true && $0.responseBytes > 100 })
    let connection = HTTP2Tests.connections(records).first
    #expect(connection?.httpExchanges == 3 && connection?.httpError == nil)
  }

  /// `Support/NAME.c` built at test time, linked with libhold.so (hold_send.c) in `scratch`.
  static func build(_ name: String, in scratch: TemporaryDirectory) throws -> URL {
    let support = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Support")
    let library = scratch.file("libhold.so")
    let client = scratch.file(name)
    for command in [
      ["-shared", "-fPIC", "-o", library.path, support.appendingPathComponent("hold_send.c").path, "-ldl"],
      ["-pthread", "-o", client.path, support.appendingPathComponent(name + ".c").path,
       "-L", scratch.url.path, "-lhold", "-Wl,-rpath," + scratch.url.path],
    ] {
      let build = try ProgramRun.run(["cc", "-Wall", "-Werror"] + command)
      try #require(build.status == 0, "cc: \(build.stderr)")
    }
    return client
  }
}
