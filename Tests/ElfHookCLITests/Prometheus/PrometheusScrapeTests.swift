import Foundation
import NetMonitor
import Testing
import TestSupport

@testable import ElfHookCLI

/// End to end: records of a real run (`elfhook run` of getent and curl against a loopback HTTP
/// server), served by the exporter, scraped by a real Prometheus every second, and queried back
/// through Prometheus's HTTP API — exact counts, a `_bucket` series, DNS and connection metrics,
/// and records appended to the file while it is served.
@Suite(
  "A real Prometheus scrapes the exporter", .serialized,
  .enabled(if: PrometheusServer.isInstalled, PrometheusServer.missing))
struct PrometheusScrapeTests {
  @Test func countsOfARealRunReachPrometheus() throws {
    let elfhook = try #require(BuiltProducts.elfhook, Comment(rawValue: BuiltProducts.missingMessage))
    let directory = try TemporaryDirectory("prometheus-scrape")
    defer { directory.remove() }

    // The loopback HTTP server curl talks to: an endpoint of its own (GET /metrics 200, else 404).
    let target = try PrometheusEndpoint(address: "127.0.0.1:0")
    defer { target.close() }
    let closedPort = try HTTPGet.freePort()
    let base = "http://127.0.0.1:\(target.port)"
    let records = directory.path("records.jsonl")
    let script = """
      getent ahosts localhost >/dev/null
      curl -s -o /dev/null -o /dev/null -o /dev/null \(base)/metrics \(base)/metrics \(base)/missing
      curl -s -o /dev/null http://127.0.0.1:\(closedPort)/
      exit 0
      """
    let run = try ProgramRun.run([elfhook, "run", "--output", records, "--", "sh", "-c", script])
    try #require(run.status == 0, "elfhook run: \(run.stderr)")

    // What the run recorded: three exchanges with the target, a lookup, a refused connection.
    let transactions = try RecordFiles.load(paths: [records])
    let exchanges = transactions.filter {
      if case .http(let http) = $0 { http.peerPort == UInt16(target.port) } else { false }
    }
    try #require(exchanges.count == 3)
    let lookups = transactions.filter { $0.kind == .dns }.count
    try #require(lookups >= 1)
    let connects = transactions.filter {
      if case .connection(let connection) = $0 { connection.role == .client && connection.connectMs != nil } else { false }
    }.count
    try #require(connects == 2)

    let exporter = try ExporterUnderTest.command(elfhook: elfhook, paths: [records], in: directory)
    defer { exporter.stop() }
    let prometheus = try PrometheusServer(targetPort: exporter.port)
    defer { prometheus.stop() }

    #expect(try prometheus.waitFor("sum(http_client_request_duration_seconds_count)", toEqual: 3) == 3)
    #expect(try prometheus.scalar(#"sum(http_client_request_duration_seconds_count{error_type="404"})"#) == 1)
    #expect(
      try prometheus.scalar(
        #"sum(http_client_request_duration_seconds_count{http_request_method="GET",http_response_status_code="200",server_address="127.0.0.1",server_port="\#(target.port)",url_scheme="http"})"#
      ) == 2)
    #expect(try prometheus.scalar(#"sum(http_client_request_duration_seconds_bucket{le="+Inf"})"#) == 3)
    #expect(try prometheus.scalar(#"sum(http_client_request_duration_seconds_bucket{le="10.0"})"#) == 3)
    #expect(try prometheus.scalar("count(count by (le) (http_client_request_duration_seconds_bucket))") == 15)
    #expect(try prometheus.scalar("sum(dns_lookup_duration_seconds_count)") == Double(lookups))
    #expect(try prometheus.scalar(#"sum(dns_lookup_duration_seconds_bucket{le="+Inf"})"#) == Double(lookups))
    #expect(try prometheus.scalar("sum(elfhook_connection_connect_duration_seconds_count)") == Double(connects))
    #expect(try prometheus.scalar(#"sum(elfhook_connection_errors_total{error_type="ECONNREFUSED"})"#) == 1)
    #expect(try prometheus.scalar("sum(elfhook_http_client_response_size_bytes_count)") == 3)

    // Records appended while serving are followed.
    let more = (0..<2).map { _ in PrometheusSamples.http(host: "example.org").jsonLine() + "\n" }.joined()
    let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: records))
    try handle.seekToEnd()
    try handle.write(contentsOf: Data(more.utf8))
    try handle.close()
    #expect(try prometheus.waitFor("sum(http_client_request_duration_seconds_count)", toEqual: 5) == 5)
    #expect(try prometheus.scalar(#"sum(http_client_request_duration_seconds_count{server_address="example.org"})"#) == 2)
  }
}
