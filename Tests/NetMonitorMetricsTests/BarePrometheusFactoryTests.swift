import NetMonitor
import NetMonitorMetrics
import Prometheus
import Testing

/// The doc example's backend as a user would write it — a `PrometheusMetricsFactory` with none of
/// elfhook's naming — fed successes and failures of every kind. swift-prometheus traps when one
/// name gets an unlabelled series and a labelled one; a trap here would be the host process dying.
@Suite struct BarePrometheusFactoryTests {
  @Test func successesAndFailuresOfEveryInstrumentShareOneRegistry() {
    let registry = PrometheusCollectorRegistry()
    let sink = MetricsSink(factory: PrometheusMetricsFactory(registry: registry))
    let failure = RecordedError(call: "getaddrinfo", code: "EAI_NONAME", message: "Name or service not known")
    let refused = RecordedError(call: "connect", code: "ECONNREFUSED", message: "Connection refused")
    let handshake = RecordedError(call: "SSL_do_handshake", code: "SSL_ERROR_SSL", message: "handshake failed")
    for transaction in [
      RecordSamples.dns(), RecordSamples.dns(error: failure), RecordSamples.http(),
      RecordSamples.http(status: 503), RecordSamples.http(status: nil), RecordSamples.http(role: .server),
      RecordSamples.http(status: 500, role: .server),
      RecordSamples.http(host: nil, reused: false, connectMs: 5, tlsMs: 9), RecordSamples.connection(),
      RecordSamples.connection(error: refused), RecordSamples.connection(tlsMs: 3, error: handshake),
      RecordSamples.connection(role: .server, error: refused),
    ] {
      sink.record(transaction)
    }
    var exposition: [UInt8] = []
    registry.emit(into: &exposition)
    let text = String(decoding: exposition, as: UTF8.self)
    #expect(text.contains("dns.lookup.duration") || text.contains("dns_lookup_duration"))
    #expect(text.contains("EAI_NONAME"))
  }
}
