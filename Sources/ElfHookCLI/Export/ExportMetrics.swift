import NetMonitor
import NetMonitorMetrics

/// The cumulative metrics of every record exported so far, per process: what `elfhook export`
/// sends as one `ExportMetricsServiceRequest`. What a record counts in is ``MetricMapping``'s —
/// the mapping `MetricsSink` and the Prometheus endpoint use — with names, units, buckets and
/// descriptions from ``ElfHookMetric``: a histogram per duration or size instrument (explicit
/// buckets), a monotonic sum for `elfhook.connection.errors`.
///
/// Temporality is cumulative: each process's streams start at its first record's `start_unix_ns`
/// and every export repeats the totals. The exporter records a batch only once the collector has
/// acknowledged its spans, and the state file persists these histograms with the cursors, so a
/// restarted exporter continues the same streams (same start time, no record counted twice).
struct ExportMetrics: Codable, Sendable {
  /// The histograms of one process.
  struct ProcessStreams: Codable, Sendable {
    var resource: ProcessResource
    var startUnixNs: UInt64
    /// Metric name → one point per attribute set, in the order first seen.
    var histograms: [String: [HistogramPoint]] = [:]
  }

  private(set) var processes: [ProcessStreams] = []

  /// Whether nothing has been recorded yet.
  var isEmpty: Bool { processes.isEmpty }

  /// Adds `transaction`'s measurements to the streams they belong to.
  mutating func record(_ transaction: Transaction) {
    for measurement in MetricMapping.measurements(of: transaction) {
      add(measurement, of: ProcessResource(pid: transaction.pid, process: transaction.process), at: transaction.startUnixNs)
    }
  }

  private mutating func add(_ measurement: MetricMeasurement, of resource: ProcessResource, at startUnixNs: UInt64) {
    let index =
      processes.firstIndex { $0.resource == resource }
      ?? {
        processes.append(ProcessStreams(resource: resource, startUnixNs: startUnixNs))
        return processes.count - 1
      }()
    processes[index].startUnixNs = min(processes[index].startUnixNs, startUnixNs)
    let metric = measurement.metric
    let boundaries = metric.buckets
    var points = processes[index].histograms[metric.name] ?? []
    points.removeAll { !$0.fits(boundaries) }  // kept with other buckets by an older version: started over
    let attributes = measurement.attributes.map(Attribute.init)
    let value = measurement.amount.value(in: metric)
    // The same attribute set in any order: a state file from an older version may keep another.
    if let existing = points.firstIndex(where: { Set($0.attributes) == Set(attributes) }) {
      points[existing].record(value, boundaries: boundaries)
    } else {
      var point = HistogramPoint(attributes: attributes, bucketCount: boundaries.count + 1)
      point.record(value, boundaries: boundaries)
      points.append(point)
    }
    processes[index].histograms[metric.name] = points
  }

  /// The export request: every stream, cumulative up to `timeUnixNs`.
  func request(serviceName: String?, timeUnixNs: UInt64) -> OTLPMetricsRequest {
    var request = OTLPMetricsRequest()
    for process in processes {
      var scopeMetrics = OTLPScopeMetrics()
      scopeMetrics.scope = ProcessResource.scope
      for metric in ElfHookMetric.allCases {
        let boundaries = metric.buckets
        let points = (process.histograms[metric.name] ?? []).filter { $0.fits(boundaries) }
        guard !points.isEmpty else { continue }
        var otlp = OTLPMetric()
        otlp.name = metric.name
        otlp.unit = metric.unit
        otlp.description_p = metric.help
        if metric.instrument == .counter {
          var sum = OTLPSum()
          sum.aggregationTemporality = .cumulative
          sum.isMonotonic = true
          sum.dataPoints = points.map { $0.otlpSum(startUnixNs: process.startUnixNs, timeUnixNs: timeUnixNs) }
          otlp.sum = sum
        } else {
          var histogram = OTLPHistogram()
          histogram.aggregationTemporality = .cumulative
          histogram.dataPoints = points.map {
            $0.otlp(boundaries: boundaries, startUnixNs: process.startUnixNs, timeUnixNs: timeUnixNs)
          }
          otlp.histogram = histogram
        }
        scopeMetrics.metrics.append(otlp)
      }
      var resourceMetrics = OTLPResourceMetrics()
      resourceMetrics.resource = process.resource.otlp(serviceName: serviceName)
      resourceMetrics.scopeMetrics = [scopeMetrics]
      request.resourceMetrics.append(resourceMetrics)
    }
    return request
  }
}

extension Attribute {
  /// The OTLP attribute of a measurement's attribute: text as a string, a number as an int.
  init(_ attribute: MetricAttribute) {
    switch attribute.value {
    case .text(let text): self.init(attribute.key, .string(text))
    case .number(let number): self.init(attribute.key, .int(number))
    }
  }
}
