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
/// What each record becomes is ``MetricMapping``'s (the mapping `elfhook export --otlp` and
/// `--prometheus` use too); ``ElfHookMetric`` lists names, units and dimensions.
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
    for measurement in MetricMapping.measurements(of: transaction) { emitter.emit(measurement) }
  }
}
