import Foundation
import NetMonitor
import Testing
import TestSupport

@testable import ElfHookCLI

/// The `/metrics` endpoint in-process: addresses, the exposition it serves, 404s, a busy port.
@Suite("Prometheus endpoint")
struct PrometheusEndpointTests {
  @Test(arguments: [
    ("127.0.0.1:9464", PrometheusAddress(host: "127.0.0.1", port: 9464) as PrometheusAddress?),
    (":9464", PrometheusAddress(host: "127.0.0.1", port: 9464)),
    ("9464", PrometheusAddress(host: "127.0.0.1", port: 9464)),
    ("[::1]:9464", PrometheusAddress(host: "::1", port: 9464)),
    ("0.0.0.0:80", PrometheusAddress(host: "0.0.0.0", port: 80)),
    ("localhost:0", PrometheusAddress(host: "localhost", port: 0)),
    ("::1:9464", nil), ("[::1]", nil), ("127.0.0.1:", nil), ("127.0.0.1:65536", nil), ("host:port", nil),
    ("", nil), ("[]:80", nil), ("127.0.0.1:+80", nil),
  ])
  func addresses(text: String, expected: PrometheusAddress?) {
    #expect(PrometheusAddress(text) == expected)
  }

  @Test func addressDescriptionBracketsIPv6() {
    #expect(PrometheusAddress(host: "::1", port: 9464).description == "[::1]:9464")
    #expect(PrometheusAddress(host: "127.0.0.1", port: 9464).description == "127.0.0.1:9464")
  }

  @Test func servesConventionalNamesWithPaddedLabels() throws {
    let endpoint = try PrometheusEndpoint(address: "127.0.0.1:0")
    defer { endpoint.close() }
    #expect(endpoint.port != 0)
    endpoint.record(PrometheusSamples.http())
    endpoint.record(PrometheusSamples.http(durationMs: 600))
    endpoint.record(PrometheusSamples.http(status: 404))
    endpoint.record(PrometheusSamples.dns())
    endpoint.record(PrometheusSamples.dns(error: RecordedError(call: "getaddrinfo", code: "EAI_NONAME", message: "x")))
    let scrape = try HTTPGet.fetch(port: endpoint.port, path: "/metrics")
    #expect(scrape.status == 200)
    #expect(scrape.headers["content-type"] == "text/plain; version=0.0.4; charset=utf-8")
    let ok =
      #"http_request_method="GET",http_response_status_code="200",server_address="example.org",server_port="443",url_scheme="https",error_type="""#
    let lines = Set(scrape.body.split(separator: "\n").map(String.init))
    #expect(lines.contains("http_client_request_duration_seconds_count{\(ok)} 2"))
    #expect(lines.contains("http_client_request_duration_seconds_sum{\(ok)} 0.64"))
    #expect(lines.contains("http_client_request_duration_seconds_bucket{\(ok),le=\"0.05\"} 1"))
    #expect(lines.contains("http_client_request_duration_seconds_bucket{\(ok),le=\"0.75\"} 2"))
    #expect(lines.contains("http_client_request_duration_seconds_bucket{\(ok),le=\"+Inf\"} 2"))
    #expect(lines.contains { $0.hasPrefix("http_client_request_duration_seconds_count{") && $0.contains(#"error_type="404""#) && $0.hasSuffix(" 1") })
    #expect(lines.contains(#"dns_lookup_duration_seconds_count{dns_question_name="example.org",error_type=""} 1"#))
    #expect(lines.contains(#"dns_lookup_duration_seconds_count{dns_question_name="example.org",error_type="EAI_NONAME"} 1"#))
    #expect(lines.contains { $0.hasPrefix("elfhook_http_client_response_size_bytes_bucket{\(ok),le=\"10000.0\"} 2") })
    #expect(lines.contains { $0.hasPrefix("elfhook_http_time_to_first_byte_seconds_count{elfhook_role=\"client\",") })
    // 14 advisory boundaries and +Inf, per series.
    #expect(lines.filter { $0.hasPrefix("http_client_request_duration_seconds_bucket{\(ok),") }.count == 15)
    #expect(lines.contains { $0.contains("# TYPE http_client_request_duration_seconds histogram") })
    #expect(!scrape.body.contains("token") && !scrape.body.contains("/a"))
    #expect(scrape.body == String(decoding: endpoint.exposition(), as: UTF8.self))
    #expect(lines.contains("# HELP dns_lookup_duration_seconds getaddrinfo calls."))
    #expect(lines.filter { $0.hasPrefix("# HELP ") }.count == lines.filter { $0.hasPrefix("# TYPE ") }.count)
  }

  @Test(
    "promtool finds nothing to lint in the exposition",
    .enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/promtool"), PrometheusServer.missing))
  func promtoolLint() throws {
    let endpoint = try PrometheusEndpoint(address: "127.0.0.1:0")
    defer { endpoint.close() }
    endpoint.record(PrometheusSamples.http())
    endpoint.record(PrometheusSamples.http(status: nil))
    endpoint.record(PrometheusSamples.dns())
    endpoint.record(
      .connection(
        ConnectionRecord(
          pid: 7, process: "curl", startUnixNs: 1, durationMs: 1, id: 2, role: .client, transport: .tcp,
          peerAddress: "127.0.0.1", peerPort: 9, connectMs: 0.2, bytesSent: 0, bytesReceived: 0, httpExchanges: 0,
          error: RecordedError(call: "connect", code: "ECONNREFUSED", message: "refused"))))
    let directory = try TemporaryDirectory("promtool")
    defer { directory.remove() }
    let exposition = try directory.write(String(decoding: endpoint.exposition(), as: UTF8.self), to: "metrics.txt")
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/bin/sh")
    process.arguments = ["-c", "/usr/bin/promtool check metrics < '\(exposition)' > '\(exposition).out' 2>&1"]
    try process.run()
    process.waitUntilExit()
    let output = try String(contentsOfFile: exposition + ".out", encoding: .utf8)
    #expect(process.terminationStatus == 0, "\(output)")
    #expect(output.isEmpty, "\(output)")
  }

  @Test func anythingButGetMetricsIs404() throws {
    let endpoint = try PrometheusEndpoint(address: ":0")
    defer { endpoint.close() }
    let empty = try HTTPGet.fetch(port: endpoint.port, path: "/metrics")
    #expect(empty.status == 200 && empty.body.isEmpty)  // no records yet
    #expect(try HTTPGet.fetch(port: endpoint.port, path: "/").status == 404)
    #expect(try HTTPGet.fetch(port: endpoint.port, path: "/metrics/x").status == 404)
    #expect(try HTTPGet.fetch(port: endpoint.port, path: "/metrics", method: "POST").status == 404)
    #expect(try HTTPGet.fetch(port: endpoint.port, path: "/metrics?name=x").status == 200)
  }

  @Test(
    "serves on IPv6 loopback", .enabled(if: (try? String(contentsOfFile: "/proc/net/if_inet6", encoding: .utf8))?
      .contains("00000000000000000000000000000001") == true && FileManager.default.isExecutableFile(atPath: "/usr/bin/curl")))
  func ipv6Loopback() throws {
    let endpoint = try PrometheusEndpoint(address: "[::1]:0")
    defer { endpoint.close() }
    #expect(endpoint.address.host == "::1")
    let run = Process()
    let pipe = Pipe()
    run.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
    run.arguments = ["-s", "-g", "-o", "/dev/null", "-w", "%{http_code}", "http://[::1]:\(endpoint.port)/metrics"]
    run.standardOutput = pipe
    try run.run()
    run.waitUntilExit()
    #expect(String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self) == "200")
  }

  @Test func busyPortIsOneClearError() throws {
    let first = try PrometheusEndpoint(address: "127.0.0.1:0")
    defer { first.close() }
    #expect(throws: PrometheusEndpointError.cannotListen(address: "127.0.0.1:\(first.port)", reason: "Address already in use")) {
      try PrometheusEndpoint(address: "127.0.0.1:\(first.port)")
    }
    do {
      try PrometheusExport.serve(address: "127.0.0.1:\(first.port)", paths: [], listening: { _ in }, until: { true })
      Issue.record("serve on a busy port returned")
    } catch {
      #expect(String(describing: error) == "cannot serve Prometheus metrics on 127.0.0.1:\(first.port): Address already in use")
    }
  }

  @Test func badAddressIsOneClearError() {
    #expect(throws: PrometheusEndpointError.badAddress("nonsense")) { try PrometheusEndpoint(address: "nonsense") }
    #expect(
      PrometheusEndpointError.badAddress("x").description
        == "not a listening address: 'x' (expected HOST:PORT, [IPV6]:PORT or :PORT, e.g. 127.0.0.1:9464)")
  }
}
