import Foundation
import Testing
import TestSupport

@testable import NetMonitor

/// The protocol a TLS handshake chose by ALPN, in the connection record (`tls_alpn`): curl under
/// `elfhook run` against nginx, which offers HTTP/2 over TLS: each protocol's exchanges are read
/// (HTTP2Tests has HTTP/2's in detail).
@Suite("TLS ALPN", .serialized)
struct ALPNTests {
  /// curl with `flag`, under `elfhook run`, fetching a 5000-byte file over TLS from nginx with
  /// HTTP/2 on: its connection records and the summary.
  func fetch(_ flag: String) throws -> (connections: [ConnectionRecord], http: Int, stderr: String) {
    let (elfhook, _) = try InjectionTests.products()
    let scratch = try TemporaryDirectory("injection")
    defer { scratch.remove() }
    let tls = try LoopbackServer.makeCertificate(in: scratch.url)
    let server = try LoopbackNginx(files: ["page.bin": 5000], tls: tls, http2: true)
    let output = scratch.file("records.jsonl")
    let run = try ProgramRun.run([
      elfhook, "run", "--output", output.path, "--", "/usr/bin/curl", "-s", "-f", flag, "--cacert", tls.certificate,
      "-o", "/dev/null", "https://localhost:\(server.tlsPort)/page.bin",
    ])
    #expect(run.status == 0, "\(run.stderr)")
    let records = try InjectionTests.records(in: output)
    let connections = InjectionTests.connectionRecords(records, port: server.tlsPort)
    let http = records.filter { if case .http = $0 { true } else { false } }.count
    return (connections, http, run.stderr)
  }

  @Test("curl --http2: the connection says h2, and its stream is an h2 http record")
  func http2() throws {
    let (connections, http, stderr) = try fetch("--http2")
    #expect(connections.count == 1)
    #expect(connections.first?.tlsALPN == "h2")
    #expect(connections.first?.httpExchanges == 1)
    #expect((connections.first?.tlsBytesReceived ?? 0) > 5000)
    #expect(http == 1)
    #expect(!stderr.contains("not read"), "\(stderr)")
  }

  @Test("curl --http1.1 to the same server: the connection says http/1.1, and its exchange is recorded")
  func http11() throws {
    let (connections, http, stderr) = try fetch("--http1.1")
    #expect(connections.count == 1)
    #expect(connections.first?.tlsALPN == "http/1.1")
    #expect(connections.first?.httpExchanges == 1)
    #expect(http == 1)
    #expect(!stderr.contains("HTTP/2"), "\(stderr)")
  }
}
