import NetMonitorMetrics

/// How swift-prometheus names MetricsSink's instruments (`PrometheusMetricsFactory.nameAndLabelSanitizer`).
///
/// MetricsSink follows OpenTelemetry and leaves out a dimension that does not apply (`error.type`
/// on a success; a DNS lookup that succeeded has no dimension at all), but swift-prometheus traps
/// when one name gets both labelled and unlabelled series. So each series of an instrument gets the
/// instrument's whole label set, `""` where a dimension is absent (Prometheus reads `""` as no
/// label), and the Prometheus name with its unit (`dns_lookup_duration_seconds`). Label names'
/// dots become underscores in swift-prometheus itself.
func prometheusNameAndLabels(_ name: String, _ labels: [(String, String)]) -> (String, [(String, String)]) {
  guard let metric = ElfHookMetric(rawValue: name) else { return (name, labels) }
  let known = metric.dimensionNames
  let padded = known.map { dimension in (dimension, labels.first { $0.0 == dimension }?.1 ?? "") }
  return (metric.prometheusName, padded + labels.filter { !known.contains($0.0) })
}
