import Foundation
import Testing
import TestSupport

@testable import NetMonitor

/// OpenSSL's data calls once a session's handshake is over, which C's hooks read themselves
/// (ssl_data_path.c): a client and a server in one process (Support/tls_pair.c, the shared
/// libssl), each exchange through SSL_read/SSL_write or their _ex forms, non-blocking, with reads
/// that would block between them. The program's every result and errno must be as without the
/// monitor, and every exchange recorded from both ends with its exact plaintext; bytes that are no
/// HTTP, counted to the byte.
@Suite("OpenSSL's data path in C: results, errno, records and counts", .serialized)
struct OpenSSLDataPathTests {
  static let rounds = 6

  static func program(in scratch: TemporaryDirectory) throws -> URL {
    let source = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Support/tls_pair.c")
    let binary = scratch.file("tls_pair")
    let build = try ProgramRun.run(["cc", "-O1", "-o", binary.path, source.path, "-lssl", "-lcrypto"])
    try #require(build.status == 0, "cc tls_pair.c: \(build.stderr)")
    return binary
  }

  /// The request and response sizes of exchange `round`, as tls_pair.c makes them.
  static func sizes(_ round: Int) -> (request: UInt64, response: UInt64, status: Int) {
    let request = "GET /item/\(round)?size=\(100 + round * 700) HTTP/1.1\r\nHost: pair\r\nX-Round: \(round)\r\n\r\n"
    let body = min(100 + round * 700, 8192)
    let head = "HTTP/1.1 \(round % 3 == 0 ? 201 : 200) OK\r\nContent-Length: \(body)\r\n\r\n"
    return (UInt64(request.utf8.count), UInt64(head.utf8.count + body), round % 3 == 0 ? 201 : 200)
  }

  /// The plaintext bytes `role`'s end sent and received over all the exchanges.
  static func plaintext(sentBy role: ConnectionRole) -> (sent: UInt64, received: UInt64) {
    let requests = (0..<rounds).reduce(UInt64(0)) { $0 + sizes($1).request }
    let responses = (0..<rounds).reduce(UInt64(0)) { $0 + sizes($1).response }
    return role == .client ? (requests, responses) : (responses, requests)
  }

  /// tls_pair run plain and under `elfhook run` (`raw`: its exchanges no HTTP), light clients on or
  /// off: both runs exit 0 with the same output, every call's result and errno alike.
  static func run(lightClients: Bool, raw: Bool, in scratch: TemporaryDirectory) throws -> TLSStackTests.Compared {
    let program = try Self.program(in: scratch)
    let tls = try LoopbackServer.makeCertificate(in: scratch.url)
    var environment = ProcessInfo.processInfo.environment
    environment["ELFHOOK_LIGHT_CLIENTS"] = lightClients ? "1" : "0"
    let run = try TLSStackTests.compare(
      [program.path, tls.certificate, tls.key, "\(Self.rounds)"] + (raw ? ["raw"] : []), scratch: scratch,
      environment: environment)
    #expect(run.plain.status == 0 && run.monitored.status == 0, "\(run.monitored.stderr)")
    let output = String(decoding: run.monitored.stdout, as: UTF8.self)
    #expect(output.hasSuffix("\(Self.rounds) exchanges\n"), "\(output)")
    #expect(output.contains("errno=11"), "reads that would block leave EAGAIN, as OpenSSL's socket read set it")
    #expect(run.monitored.stdout == run.plain.stdout, "every call's result and errno as without the monitor")
    return run
  }

  /// `role`'s end has one connection record: TLS 1.3, timed, its plaintext counted to the byte
  /// both ways, with `exchanges` http exchanges.
  static func expectConnection(_ records: [Transaction], _ role: ConnectionRole, exchanges: Int) throws {
    let connection = try #require(
      records.compactMap { record -> ConnectionRecord? in
        guard case .connection(let connection) = record, connection.role == role else { return nil }
        return connection
      }.first, "\(role): \(records)")
    let (sent, received) = plaintext(sentBy: role)
    #expect(connection.tlsBytesSent == sent && connection.tlsBytesReceived == received, "\(connection)")
    #expect((connection.httpExchanges ?? 0) == exchanges, "\(connection)")
    #expect(connection.tlsMs != nil && connection.tlsVersion == "TLSv1.3", "\(connection)")
  }

  @Test("a client and a server in one process: the same output as plain, every exchange recorded at both ends",
        arguments: [false, true])
  func clientAndServer(lightClients: Bool) throws {
    let scratch = try TemporaryDirectory("tls-pair")
    defer { scratch.remove() }
    let run = try Self.run(lightClients: lightClients, raw: false, in: scratch)

    for role in [ConnectionRole.client, .server] {
      let exchanges = run.records.compactMap { record -> HTTPRecord? in
        guard case .http(let http) = record, http.role == role else { return nil }
        return http
      }.sorted { $0.startUnixNs < $1.startUnixNs }
      try #require(exchanges.count == Self.rounds, "\(role): \(exchanges)")
      for (round, exchange) in exchanges.enumerated() {
        let expected = Self.sizes(round)
        #expect(exchange.method == "GET" && exchange.target.hasPrefix("/item/\(round)?"), "\(exchange)")
        #expect(exchange.status == expected.status && exchange.responseComplete == true, "\(exchange)")
        #expect(exchange.requestBytes == expected.request && exchange.responseBytes == expected.response, "\(exchange)")
        #expect(exchange.scheme == .https && exchange.reusedConnection == (round > 0), "\(exchange)")
      }
      try Self.expectConnection(run.records, role, exchanges: Self.rounds)
    }
  }

  @Test("bytes that are no HTTP over TLS: counted to the byte, in C once the parser gave up; no http record",
        arguments: [false, true])
  func notHTTP(lightClients: Bool) throws {
    let scratch = try TemporaryDirectory("tls-pair-raw")
    defer { scratch.remove() }
    let run = try Self.run(lightClients: lightClients, raw: true, in: scratch)
    let exchanges = run.records.filter { if case .http = $0 { return true } else { return false } }
    #expect(exchanges.isEmpty, "\(exchanges)")
    for role in [ConnectionRole.client, .server] { try Self.expectConnection(run.records, role, exchanges: 0) }
  }
}
