import CoreMetrics
import Synchronization

/// The instruments `MetricsSink` has made, by name and attributes, so that a record costs
/// dictionary lookups rather than a factory call per instrument (a Prometheus factory validates
/// and hashes every label under a lock on each call).
///
/// Bounded: after `limit` entries of a kind, further instruments are made per record and not kept
/// (correct, only slower) — the dimensions are low-cardinality by design, so this is a guard, not
/// the normal case.
final class InstrumentCache: Sendable {
  struct Key: Hashable {
    var metric: ElfHookMetric
    /// The measurement's attributes, as they are: no array made, no number written as text, to
    /// look an instrument up (what a record costs `elfhook export --prometheus` is mostly this).
    var attributes: [MetricAttribute]

    init(_ metric: ElfHookMetric, _ attributes: [MetricAttribute]) {
      self.metric = metric
      self.attributes = attributes
    }

    /// The metric and the attributes' values: their names are the metric's dimension names, the
    /// same text in every key (`==` still compares them).
    func hash(into hasher: inout Hasher) {
      hasher.combine(metric)
      hasher.combine(attributes.count)
      for attribute in attributes { hasher.combine(attribute.value) }
    }
  }

  /// A measurement's attributes as swift-metrics dimensions: names and values as text.
  static func dimensions(_ attributes: [MetricAttribute]) -> [(String, String)] {
    attributes.map { ($0.key, $0.text) }
  }

  /// Entries kept per kind of instrument.
  let limit: Int
  private let timers = Mutex<[Key: CoreMetrics.Timer]>([:])
  private let recorders = Mutex<[Key: Recorder]>([:])
  private let counters = Mutex<[Key: Counter]>([:])

  init(limit: Int = 10_000) {
    self.limit = limit
  }

  func timer(_ metric: ElfHookMetric, _ attributes: [MetricAttribute], factory: any MetricsFactory) -> CoreMetrics.Timer {
    let key = Key(metric, attributes)
    if let timer = timers.withLock({ $0[key] }) { return timer }
    let timer = CoreMetrics.Timer(label: metric.name, dimensions: Self.dimensions(attributes), factory: factory)
    timers.withLock { if $0.count < limit { $0[key] = timer } }
    return timer
  }

  func recorder(_ metric: ElfHookMetric, _ attributes: [MetricAttribute], factory: any MetricsFactory) -> Recorder {
    let key = Key(metric, attributes)
    if let recorder = recorders.withLock({ $0[key] }) { return recorder }
    let recorder = Recorder(
      label: metric.name, dimensions: Self.dimensions(attributes), aggregate: true, factory: factory)
    recorders.withLock { if $0.count < limit { $0[key] = recorder } }
    return recorder
  }

  func counter(_ metric: ElfHookMetric, _ attributes: [MetricAttribute], factory: any MetricsFactory) -> Counter {
    let key = Key(metric, attributes)
    if let counter = counters.withLock({ $0[key] }) { return counter }
    let counter = Counter(label: metric.name, dimensions: Self.dimensions(attributes), factory: factory)
    counters.withLock { if $0.count < limit { $0[key] = counter } }
    return counter
  }
}
