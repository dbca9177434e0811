import CoreMetrics
import Synchronization

/// The instruments `MetricsSink` has made, by name and dimension values, so that a record costs
/// dictionary lookups rather than a factory call per instrument (a Prometheus factory validates
/// and hashes every label under a lock on each call).
///
/// Bounded: after `limit` entries of a kind, further instruments are made per record and not kept
/// (correct, only slower) — the dimensions are low-cardinality by design, so this is a guard, not
/// the normal case.
final class InstrumentCache: Sendable {
  struct Key: Hashable {
    var metric: ElfHookMetric
    /// Name, value, name, value… in emission order.
    var dimensions: [String]

    init(_ metric: ElfHookMetric, _ dimensions: [(String, String)]) {
      self.metric = metric
      self.dimensions = dimensions.flatMap { [$0.0, $0.1] }
    }
  }

  /// Entries kept per kind of instrument.
  let limit: Int
  private let timers = Mutex<[Key: CoreMetrics.Timer]>([:])
  private let recorders = Mutex<[Key: Recorder]>([:])
  private let counters = Mutex<[Key: Counter]>([:])

  init(limit: Int = 10_000) {
    self.limit = limit
  }

  func timer(_ metric: ElfHookMetric, _ dimensions: [(String, String)], factory: any MetricsFactory) -> CoreMetrics.Timer {
    let key = Key(metric, dimensions)
    if let timer = timers.withLock({ $0[key] }) { return timer }
    let timer = CoreMetrics.Timer(label: metric.name, dimensions: dimensions, factory: factory)
    timers.withLock { if $0.count < limit { $0[key] = timer } }
    return timer
  }

  func recorder(_ metric: ElfHookMetric, _ dimensions: [(String, String)], factory: any MetricsFactory) -> Recorder {
    let key = Key(metric, dimensions)
    if let recorder = recorders.withLock({ $0[key] }) { return recorder }
    let recorder = Recorder(label: metric.name, dimensions: dimensions, aggregate: true, factory: factory)
    recorders.withLock { if $0.count < limit { $0[key] = recorder } }
    return recorder
  }

  func counter(_ metric: ElfHookMetric, _ dimensions: [(String, String)], factory: any MetricsFactory) -> Counter {
    let key = Key(metric, dimensions)
    if let counter = counters.withLock({ $0[key] }) { return counter }
    let counter = Counter(label: metric.name, dimensions: dimensions, factory: factory)
    counters.withLock { if $0.count < limit { $0[key] = counter } }
    return counter
  }
}
