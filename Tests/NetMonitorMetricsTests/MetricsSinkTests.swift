import CoreMetrics
import MetricsTestKit
import NetMonitor
import NetMonitorMetrics
import Testing

/// Records in, instruments out: `MetricsSink` against swift-metrics' `TestMetrics`, with exact
/// names, dimension sets and values.
@Suite struct MetricsSinkTests {
  let metrics = TestMetrics()
  let sink: MetricsSink

  init() {
    sink = MetricsSink(factory: metrics)
  }

  /// Dimensions as a dictionary, for comparisons that ignore order.
  func dimensions(_ pairs: [(String, String)]) -> [String: String] {
    Dictionary(pairs, uniquingKeysWith: { first, _ in first })
  }

  @Test func clientExchangeBecomesDurationSizesAndTimeToFirstByte() throws {
    sink.record(RecordSamples.http())
    let expected: [(String, String)] = [
      ("http.request.method", "GET"), ("http.response.status_code", "200"),
      ("server.address", "example.org"), ("server.port", "443"), ("url.scheme", "https"),
    ]
    let duration = try metrics.expectTimer("http.client.request.duration", expected)
    #expect(duration.values == [120_000_000])
    #expect(try metrics.expectRecorder("elfhook.http.client.request.size", expected).values == [95])
    #expect(try metrics.expectRecorder("elfhook.http.client.response.size", expected).values == [1_256])
    let ttfb = try metrics.expectTimer("elfhook.http.time_to_first_byte", [("elfhook.role", "client")] + expected)
    #expect(ttfb.values == [80_000_000])
    #expect(metrics.timers.count == 2)
    #expect(metrics.recorders.count == 2)
    #expect(metrics.counters.isEmpty)
  }

  @Test func grpcCallAddsItsRPCDurationAndItsStatusIsTheErrorType() throws {
    guard case .http(var record) = RecordSamples.http(role: .server) else { return }
    record.target = "/test.Echo/Fail"
    record.grpcStatus = 13  // INTERNAL: the server's own failure
    sink.record(.http(record))
    let rpc = try metrics.expectTimer(
      "rpc.server.duration",
      [("rpc.system", "grpc"), ("rpc.service", "test.Echo"), ("rpc.method", "Fail"), ("rpc.grpc.status_code", "13")])
    #expect(rpc.values == [120_000_000])
    let duration = try metrics.expectTimer(
      "http.server.request.duration",
      [("http.request.method", "GET"), ("http.response.status_code", "200"), ("url.scheme", "https"), ("error.type", "13")])
    #expect(duration.values == [120_000_000])
  }

  @Test func exactCountsOverManyRecords() throws {
    for index in 0..<25 { sink.record(RecordSamples.http(durationMs: Double(index))) }
    for _ in 0..<7 { sink.record(RecordSamples.http(status: 503)) }
    let timers = metrics.timers(label: "http.client.request.duration")
    #expect(timers.count == 2)
    #expect(timers.map(\.values.count).sorted() == [7, 25])
    let ok = try #require(timers.first { dimensions($0.dimensions)["error.type"] == nil })
    #expect(ok.values == (0..<25).map { Int64($0) * 1_000_000 })
    let failed = try #require(timers.first { dimensions($0.dimensions)["error.type"] == "503" })
    #expect(dimensions(failed.dimensions)["http.response.status_code"] == "503")
  }

  @Test(arguments: [
    (404, "404" as String?), (399, nil), (500, "500"), (302, nil),
  ])
  func clientErrorTypeFromStatus(status: Int, errorType: String?) throws {
    sink.record(RecordSamples.http(status: status))
    let timer = try #require(metrics.timers(label: "http.client.request.duration").first)
    #expect(dimensions(timer.dimensions)["error.type"] == errorType)
  }

  @Test func responseCutShort() throws {
    sink.record(RecordSamples.http(status: 200, responseComplete: false))
    let timer = try #require(metrics.timers(label: "http.client.request.duration").first)
    #expect(dimensions(timer.dimensions)["error.type"] == "incomplete_response")
  }

  @Test func exchangeWithoutResponse() throws {
    sink.record(RecordSamples.http(status: nil, ttfbMs: nil, responseBytes: 0))
    let timer = try #require(metrics.timers(label: "http.client.request.duration").first)
    let values = dimensions(timer.dimensions)
    #expect(values["error.type"] == "no_response")
    #expect(values["http.response.status_code"] == nil)
    #expect(metrics.timers(label: "elfhook.http.time_to_first_byte").isEmpty)
  }

  @Test func boundedCardinality() throws {
    sink.record(RecordSamples.http(method: "PURGE", host: "[::1]:8080", scheme: .http))
    sink.record(RecordSamples.http(method: "get", host: nil, scheme: .http))
    sink.record(RecordSamples.http(host: "api.example.org:8443"))
    let all = metrics.timers(label: "http.client.request.duration").map { dimensions($0.dimensions) }
    #expect(all.count == 3)
    #expect(all.contains { $0["http.request.method"] == "_OTHER" && $0["server.address"] == "::1" && $0["server.port"] == "8080" })
    #expect(all.contains { $0["server.address"] == "192.0.2.1" && $0["server.port"] == "443" })  // no Host: the peer
    #expect(all.contains { $0["server.address"] == "api.example.org" && $0["server.port"] == "8443" })
    #expect(!all.contains { $0.values.contains { $0.contains("/users") || $0.contains("token") } })
    #expect(all.allSatisfy { Set($0.keys).isSubset(of: ElfHookMetric.httpClientRequestDuration.dimensionNames) })
  }

  @Test func dnsLookups() throws {
    sink.record(RecordSamples.dns(durationMs: 2))
    sink.record(RecordSamples.dns(durationMs: 4))
    sink.record(RecordSamples.dns(durationMs: 9, error: RecordedError(call: "getaddrinfo", code: "EAI_NONAME", message: "no")))
    let name = ("dns.question.name", "example.org")
    #expect(try metrics.expectTimer("dns.lookup.duration", [name]).values == [2_000_000, 4_000_000])
    #expect(try metrics.expectTimer("dns.lookup.duration", [name, ("error.type", "EAI_NONAME")]).values == [9_000_000])
  }

  @Test func clientConnectionPhases() throws {
    sink.record(RecordSamples.connection())
    let server: [(String, String)] = [("server.address", "example.org"), ("server.port", "443")]
    let connect = try metrics.expectTimer(
      "elfhook.connection.connect.duration", server + [("network.transport", "tcp")])
    #expect(connect.values == [10_000_000])
    let tls = try metrics.expectTimer(
      "elfhook.connection.tls.duration",
      [("elfhook.role", "client")] + server + [("tls.protocol.version", "1.3")])
    #expect(tls.values == [30_000_000])
    #expect(metrics.counters.isEmpty)
  }

  @Test func refusedConnection() throws {
    let refused = RecordedError(call: "connect", code: "ECONNREFUSED", message: "Connection refused")
    sink.record(RecordSamples.connection(host: nil, peerAddress: "127.0.0.1", peerPort: 9, tlsMs: nil, error: refused))
    let server: [(String, String)] = [("server.address", "127.0.0.1"), ("server.port", "9")]
    let connect = try metrics.expectTimer(
      "elfhook.connection.connect.duration",
      server + [("network.transport", "tcp"), ("error.type", "ECONNREFUSED")])
    #expect(connect.values == [10_000_000])
    let errors = try metrics.expectCounter(
      "elfhook.connection.errors",
      [("elfhook.role", "client"), ("error.type", "ECONNREFUSED"), ("elfhook.error.call", "connect")] + server)
    #expect(errors.totalValue == 1)
  }

  @Test func handshakeFailureIsTheTLSPhaseError() throws {
    let failed = RecordedError(call: "SSL_do_handshake", code: "SSL_ERROR_SSL", message: "bad certificate")
    sink.record(RecordSamples.connection(tlsVersion: nil, error: failed))
    let tls = try #require(metrics.timers(label: "elfhook.connection.tls.duration").first)
    #expect(dimensions(tls.dimensions)["error.type"] == "SSL_ERROR_SSL")
    let connect = try #require(metrics.timers(label: "elfhook.connection.connect.duration").first)
    #expect(dimensions(connect.dimensions)["error.type"] == nil)
  }

  @Test func acceptedConnectionNamesNoPeer() throws {
    let reset = RecordedError(call: "read", code: "ECONNRESET", message: "reset")
    sink.record(
      RecordSamples.connection(role: .server, host: nil, peerAddress: "203.0.113.9", peerPort: 51_000, connectMs: nil, error: reset))
    #expect(metrics.timers(label: "elfhook.connection.connect.duration").isEmpty)
    let tls = try metrics.expectTimer(
      "elfhook.connection.tls.duration", [("elfhook.role", "server"), ("tls.protocol.version", "1.3")])
    #expect(tls.values == [30_000_000])
    let errors = try metrics.expectCounter(
      "elfhook.connection.errors",
      [("elfhook.role", "server"), ("error.type", "ECONNRESET"), ("elfhook.error.call", "read")])
    #expect(errors.totalValue == 1)
  }

  @Test func phasesOfAConnectionCountOnceFromItsFirstExchange() throws {
    sink.record(RecordSamples.http(reused: false, connectMs: 10, tlsMs: 30))
    sink.record(RecordSamples.http(reused: true))
    sink.record(RecordSamples.connection(httpExchanges: 2))
    let server: [(String, String)] = [("server.address", "example.org"), ("server.port", "443")]
    let connect = try metrics.expectTimer(
      "elfhook.connection.connect.duration", server + [("network.transport", "tcp")])
    #expect(connect.values == [10_000_000])
    let tls = try metrics.expectTimer(
      "elfhook.connection.tls.duration",
      [("elfhook.role", "client")] + server + [("tls.protocol.version", "1.3")])
    #expect(tls.values == [30_000_000])
    #expect(metrics.timers(label: "elfhook.connection.connect.duration").count == 1)
    #expect(metrics.timers(label: "elfhook.connection.tls.duration").count == 1)
    #expect(metrics.timers(label: "dns.lookup.duration").isEmpty)
    #expect(try metrics.expectTimer("http.client.request.duration", [
      ("http.request.method", "GET"), ("http.response.status_code", "200"),
      ("server.address", "example.org"), ("server.port", "443"), ("url.scheme", "https"),
    ]).values.count == 2)
  }

  @Test func serverExchange() throws {
    sink.record(RecordSamples.http(host: "attacker-chosen.example", status: 503, role: .server, reused: false, tlsMs: 12))
    sink.record(RecordSamples.http(host: "other.example", status: 404, role: .server))
    let failed = try metrics.expectTimer("http.server.request.duration", [
      ("http.request.method", "GET"), ("http.response.status_code", "503"), ("url.scheme", "https"),
      ("error.type", "503"),
    ])
    #expect(failed.values == [120_000_000])
    let notFound = try metrics.expectTimer("http.server.request.duration", [
      ("http.request.method", "GET"), ("http.response.status_code", "404"), ("url.scheme", "https"),
    ])
    #expect(notFound.values == [120_000_000])
    #expect(metrics.timers(label: "http.client.request.duration").isEmpty)
    #expect(try metrics.expectRecorder("elfhook.http.server.response.size", [
      ("http.request.method", "GET"), ("http.response.status_code", "404"), ("url.scheme", "https"),
    ]).values == [1_256])
    let tls = try metrics.expectTimer(
      "elfhook.connection.tls.duration", [("elfhook.role", "server"), ("tls.protocol.version", "1.3")])
    #expect(tls.values == [12_000_000])
    #expect(metrics.timers(label: "elfhook.connection.connect.duration").isEmpty)
  }

  @Test func recordWithoutRoleIsAClients() throws {
    sink.record(RecordSamples.http(role: nil))
    #expect(metrics.timers(label: "http.client.request.duration").count == 1)
  }

  @Test func withoutAFactoryTheCurrentOneIsUsedAtEachRecord() throws {
    let sink = MetricsSink()
    withMetricsFactory(metrics) { sink.record(RecordSamples.dns(durationMs: 1)) }
    let other = TestMetrics()
    withMetricsFactory(other) { sink.record(RecordSamples.dns(durationMs: 2)) }
    #expect(try metrics.expectTimer("dns.lookup.duration", [("dns.question.name", "example.org")]).values == [1_000_000])
    #expect(try other.expectTimer("dns.lookup.duration", [("dns.question.name", "example.org")]).values == [2_000_000])
  }

  @Test func copiesShareInstruments() throws {
    let copy = sink
    sink.record(RecordSamples.dns(durationMs: 1))
    copy.record(RecordSamples.dns(durationMs: 2))
    #expect(try metrics.expectTimer("dns.lookup.duration", [("dns.question.name", "example.org")]).values == [1_000_000, 2_000_000])
  }

  @Test func negativeAndNonFiniteDurationsAreDropped() {
    sink.record(RecordSamples.dns(durationMs: -1))
    sink.record(RecordSamples.dns(durationMs: .nan))
    #expect(metrics.timers.isEmpty)
  }

  @Test func everyInstrumentHasItsTableEntry() {
    #expect(ElfHookMetric.httpClientRequestDuration.prometheusName == "http_client_request_duration_seconds")
    #expect(ElfHookMetric.httpServerResponseSize.prometheusName == "elfhook_http_server_response_size_bytes")
    #expect(ElfHookMetric.connectionErrors.prometheusName == "elfhook_connection_errors_total")
    #expect(ElfHookMetric(named: "dns_lookup_duration_seconds") == .dnsLookupDuration)
    #expect(ElfHookMetric(named: "dns.lookup.duration") == .dnsLookupDuration)
    #expect(ElfHookMetric(named: "other") == nil)
    #expect(Set(ElfHookMetric.allCases.map(\.prometheusName)).count == ElfHookMetric.allCases.count)
  }
}
