import CoreMetrics
import NetMonitor

/// A `TransactionSink` that turns every record into swift-metrics instruments named by the
/// OpenTelemetry semantic conventions; any swift-metrics backend exports them (Prometheus,
/// OpenTelemetry, StatsD…).
///
/// ```swift
/// MetricsSystem.bootstrap(PrometheusMetricsFactory(registry: registry))
/// try NetMonitor.start(sink: MetricsSink())
/// ```
///
/// What each record becomes (`ElfHookMetric` lists names, units and dimensions):
/// - `http` — `http.client.request.duration` or `http.server.request.duration` (a `Timer`),
///   `elfhook.http.time_to_first_byte` (when a response came), and the request and response sizes
///   (`Recorder`s in bytes). The role decides client or server names (no role: client).
///   `server.address`/`server.port` come from the `Host` header, so the series follow the name a
///   program asked for, not the address it happened to reach.
/// - `dns` — `dns.lookup.duration`, with `error.type` (`EAI_NONAME`…) on failure.
/// - `connection` — `elfhook.connection.connect.duration` (client connections),
///   `elfhook.connection.tls.duration` (with TLS), and one `elfhook.connection.errors` for a
///   connection that failed.
///
/// Each connection's phases are counted once: from its first HTTP exchange, which carries them
/// (`HTTPRecord.connectMs`, `tlsMs`), so they appear when the first response is complete rather
/// than when a keep-alive connection closes, maybe hours later; from the connection record at close
/// for a connection without HTTP exchanges (one that failed to connect or to handshake, a database
/// connection, TLS through an unhooked library). `dns.lookup.duration` comes from `dns` records
/// only — one per `getaddrinfo` call — never from `HTTPRecord.dnsMs`, which repeats one of them.
///
/// Cardinality stays bounded: no URL path or query, no pid, methods outside the standard nine
/// become `_OTHER`, and an accepted connection's peer (the caller) is never a dimension.
///
/// Thread-safe. With a factory given, the instruments made are kept (per name and dimension
/// values, bounded), so a record costs a few dictionary lookups; copies of a sink share them.
/// With the bootstrapped factory, instruments are asked of `MetricsSystem.factory` at each record
/// (it may not be bootstrapped yet when the sink is made).
public struct MetricsSink: TransactionSink {
  private let factory: (any MetricsFactory)?
  private let cache: InstrumentCache?

  /// Creates a sink emitting through `factory`.
  ///
  /// - Parameter factory: where instruments are made; `nil` (the default) uses the factory
  ///   `MetricsSystem.bootstrap(_:)` installed, looked up at each record, so a sink created before
  ///   the bootstrap still reaches it.
  public init(factory: (any MetricsFactory)? = nil) {
    self.factory = factory
    self.cache = factory == nil ? nil : InstrumentCache()
  }

  /// Records the instruments one transaction maps to.
  public func record(_ transaction: Transaction) {
    let emitter = MetricEmitter(factory: factory ?? MetricsSystem.factory, cache: cache)
    switch transaction {
    case .http(let record): emitter.emitHTTP(record)
    case .dns(let record): emitter.emitDNS(record)
    case .connection(let record): emitter.emitConnection(record)
    }
  }
}
