import NetMonitorMetrics
import Prometheus

/// How `MetricsSink`'s instruments become Prometheus metrics: the one place the OpenTelemetry
/// names meet Prometheus's.
///
/// swift-prometheus keeps a swift-metrics label as the metric name, with every character Prometheus
/// does not allow replaced by `_` and no unit added (`http.client.request.duration` would come out
/// as `http_client_request_duration`); the factory made here names each `ElfHookMetric` by
/// OpenTelemetry's Prometheus compatibility rules instead (`ElfHookMetric.prometheusName`):
/// `http_client_request_duration_seconds`, `dns_lookup_duration_seconds`,
/// `elfhook_http_client_response_size_bytes`, `elfhook_connection_errors_total`. Label names get
/// `_` for `.` (`http_request_method`, `server_address`, `error_type`).
///
/// swift-prometheus refuses (traps on) one name carrying both labelled and unlabelled series, and
/// OpenTelemetry omits a dimension that does not apply; so every series of an instrument is given
/// the instrument's full label set, `""` where the dimension is absent — which Prometheus treats
/// exactly as a missing label.
///
/// `Timer`s become histograms in seconds with the semantic conventions' advisory buckets (0.005 s
/// to 10 s); size `Recorder`s histograms in bytes with decade buckets (100 B to 100 MB).
enum PrometheusNaming {
  /// A factory registering into `registry`, with the names, labels and buckets above.
  static func factory(registry: PrometheusCollectorRegistry) -> PrometheusMetricsFactory {
    var factory = PrometheusMetricsFactory(registry: registry)
    factory.defaultDurationHistogramBuckets = ElfHookMetric.durationBucketsSeconds.map {
      .nanoseconds(Int64(($0 * 1_000_000_000).rounded()))
    }
    factory.defaultValueHistogramBuckets = ElfHookMetric.sizeBucketsBytes
    factory.nameAndLabelSanitizer = ElfHookMetric.prometheusNameAndLabels
    return factory
  }

  /// `exposition` with a `# HELP` line (`ElfHookMetric.help`) before each `# TYPE` line of an
  /// `ElfHookMetric`: swift-prometheus writes help only for metrics registered with it, never for
  /// those its swift-metrics factory makes.
  static func addingHelp(to exposition: [UInt8]) -> [UInt8] {
    let typePrefix = Array("# TYPE ".utf8)
    var result: [UInt8] = []
    result.reserveCapacity(exposition.count + 2_048)
    for line in exposition.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false) {
      if line.starts(with: typePrefix) {
        let name = line.dropFirst(typePrefix.count).prefix { $0 != UInt8(ascii: " ") }
        if let metric = ElfHookMetric(named: String(decoding: name, as: UTF8.self)) {
          result += Array("# HELP ".utf8) + name + Array(" \(metric.help)\n".utf8)
        }
      }
      result += line
      result.append(UInt8(ascii: "\n"))
    }
    result.removeLast()  // split gave one more piece than there are newlines
    return result
  }
}
