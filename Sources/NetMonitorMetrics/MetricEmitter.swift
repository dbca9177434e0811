import CoreMetrics

/// Records measurements (``MetricMapping``) through one swift-metrics factory: a duration with a
/// `Timer` (whole nanoseconds), a size with an aggregating `Recorder`, a count with a `Counter`,
/// each named by its ``ElfHookMetric`` and carrying its attributes as dimensions (as text).
struct MetricEmitter {
  let factory: any MetricsFactory
  /// Where made instruments are kept; `nil`: made anew for each record.
  let cache: InstrumentCache?

  func emit(_ measurement: MetricMeasurement) {
    let metric = measurement.metric
    let attributes = measurement.attributes
    switch measurement.amount {
    case .milliseconds(let milliseconds):
      guard let nanoseconds = MetricAttributes.nanoseconds(milliseconds: milliseconds) else { return }
      let timer =
        cache?.timer(metric, attributes, factory: factory)
        ?? Timer(label: metric.name, dimensions: InstrumentCache.dimensions(attributes), factory: factory)
      timer.recordNanoseconds(nanoseconds)
    case .bytes(let bytes):
      let recorder =
        cache?.recorder(metric, attributes, factory: factory)
        ?? Recorder(
          label: metric.name, dimensions: InstrumentCache.dimensions(attributes), aggregate: true, factory: factory)
      recorder.record(bytes)
    case .one:
      let counter =
        cache?.counter(metric, attributes, factory: factory)
        ?? Counter(label: metric.name, dimensions: InstrumentCache.dimensions(attributes), factory: factory)
      counter.increment()
    }
  }
}
