import Foundation
import Testing
import TestSupport

@testable import NetMonitor

/// Exchanges that end at a close rather than at a response's last byte, recorded from a real curl
/// under `elfhook run`: a request no response answered, and a request body the server did not
/// wait for.
@Suite("Exchanges cut short by a close", .serialized)
struct CutShortExchangeTests {
  /// The records of `curl ARGUMENTS` run under `elfhook run`, with curl's exit status.
  static func curlRecords(_ arguments: [String], in scratch: TemporaryDirectory) throws
    -> (status: Int32, http: [HTTPRecord], connections: [ConnectionRecord])
  {
    let (elfhook, _) = try InjectionTests.products()
    let output = scratch.file("records.jsonl")
    let run = try ProgramRun.run([elfhook, "run", "--output", output.path, "--", "curl"] + arguments)
    let records = try InjectionTests.records(in: output)
    let http = records.compactMap { record -> HTTPRecord? in
      guard case .http(let http) = record else { return nil }
      return http
    }
    let connections = records.compactMap { record -> ConnectionRecord? in
      guard case .connection(let connection) = record else { return nil }
      return connection
    }
    return (run.status, http, connections)
  }

  @Test("a request the server closed on without answering: recorded with no status, its bytes, no first byte")
  func unanswered() throws {
    let server = try LoopbackServer()
    let scratch = try TemporaryDirectory("injection")
    defer { scratch.remove() }
    let (status, http, connections) = try Self.curlRecords(
      ["-s", "-o", "/dev/null", "http://127.0.0.1:\(server.port)/hangup?q=1"], in: scratch)
    #expect(status == 52)  // curl: empty reply from server
    let connection = try #require(connections.first { $0.peerPort == server.port })
    let request = try #require(http.first)
    #expect(http.count == 1 && connection.httpExchanges == 1)
    #expect(request.method == "GET" && request.target == "/hangup?q=1" && request.status == nil)
    #expect(request.responseComplete == nil)
    #expect(request.requestBytes == connection.bytesSent && request.requestBytes > 0)
    #expect(request.responseBytes == 0 && connection.bytesReceived == 0)
    #expect(request.ttfbMs == nil && request.durationMs >= 0)
  }

  @Test("a response the server cut short: its status, the bytes that came, and not complete (an error)")
  func responseCutShort() throws {
    let server = try LoopbackServer()
    let scratch = try TemporaryDirectory("injection")
    defer { scratch.remove() }
    let url = "http://127.0.0.1:\(server.port)"
    let (status, http, connections) = try Self.curlRecords(
      ["-s", "-o", "/dev/null", "-o", "/dev/null", url + "/bytes/100", url + "/truncated/1000"], in: scratch)
    #expect(status == 18)  // curl: transfer closed with outstanding read data remaining
    let connection = try #require(connections.first { $0.peerPort == server.port })
    try #require(http.count == 2)
    #expect(http[0].status == 200 && http[0].responseComplete == true)
    #expect(http[1].status == 200 && http[1].responseComplete == false && http[1].target == "/truncated/1000")
    #expect(http.map(\.responseBytes).reduce(0, +) == connection.bytesReceived)
    // The summary counts it among the errors.
    let (elfhook, _) = try InjectionTests.products()
    let report = try ProgramRun.run([elfhook, "report", scratch.file("records.jsonl").path])
    #expect(String(decoding: report.stdout, as: UTF8.self).contains("; 1 error"), "\(report.stdout)")
  }

  @Test("a body the server answered before it was all sent: the request's bytes are those sent")
  func bodyCutShort() throws {
    let server = try LoopbackServer()
    let scratch = try TemporaryDirectory("injection")
    defer { scratch.remove() }
    let body = scratch.file("body.bin")
    try Data(count: 8 << 20).write(to: body)
    let (_, http, connections) = try Self.curlRecords(
      ["-s", "-o", "/dev/null", "-H", "Expect:", "--data-binary", "@" + body.path,
       "http://127.0.0.1:\(server.port)/reject"], in: scratch)
    let connection = try #require(connections.first { $0.peerPort == server.port })
    let request = try #require(http.first)
    #expect(http.count == 1 && request.method == "POST" && request.status == 413 && request.responseComplete == true)
    // Every byte curl sent was this request's: its head and the part of the body sent.
    #expect(request.requestBytes == connection.bytesSent)
    #expect(request.requestBytes > 65536 && request.requestBytes < 8 << 20)
    #expect(request.responseBytes == connection.bytesReceived)
  }
}
