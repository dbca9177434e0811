import Foundation
import Testing
import TestSupport

@testable import NetMonitor

/// A TLS client that never calls a handshake function: `openssl s_client` sets the connect state
/// and lets its first SSL_write run the handshake. Its connection still gets the handshake's time
/// and version, as one made with SSL_connect does.
@Suite("A handshake run inside the first SSL_write")
struct ImplicitHandshakeTests {
  @Test("openssl s_client: tls_ms and tls_version on the connection and on its exchange")
  func sClient() throws {
    let (elfhook, _) = try InjectionTests.products()
    let scratch = try TemporaryDirectory("injection")
    defer { scratch.remove() }
    let server = try LoopbackServer(tls: try LoopbackServer.makeCertificate(in: scratch.url))
    let output = scratch.file("records.jsonl")
    let request = "GET /bytes/5 HTTP/1.1\\r\\nHost: localhost:\(server.port)\\r\\nConnection: close\\r\\n\\r\\n"
    let run = try ProgramRun.run([
      elfhook, "run", "--output", output.path, "--", "sh", "-c",
      "printf '\(request)' | openssl s_client -quiet -connect 127.0.0.1:\(server.port) -servername localhost",
    ])
    // s_client ends with status 1: the server closes without a close_notify ("unexpected eof").
    #expect(String(decoding: run.stdout, as: UTF8.self).hasSuffix("\r\n\r\nxxxxx"), "the body came: \(run.stderr)")
    let records = try InjectionTests.records(in: output)
    let connection = try #require(InjectionTests.connectionRecords(records, port: server.port).first)
    let exchange = try #require(InjectionTests.httpRecords(records, port: server.port).first)
    #expect(connection.tlsVersion?.hasPrefix("TLSv1.") == true, "\(connection)")
    let tlsMs = try #require(connection.tlsMs, "\(connection)")
    #expect(tlsMs > 0 && tlsMs < connection.durationMs)
    #expect(exchange.scheme == .https && exchange.status == 200)
    #expect(exchange.tlsMs == tlsMs && exchange.tlsVersion == connection.tlsVersion, "\(exchange)")
  }
}
