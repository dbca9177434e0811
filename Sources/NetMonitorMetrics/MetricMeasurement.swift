/// One value a record gives one instrument, under one attribute set: what ``MetricMapping`` makes
/// of a record, and what every backend records — `MetricsSink` through swift-metrics, `elfhook
/// export --otlp` as OTLP histograms.
public struct MetricMeasurement: Sendable, Equatable {
  /// What is measured: a duration, a size, or one more of a count.
  public enum Amount: Sendable, Equatable {
    case milliseconds(Double)
    case bytes(UInt64)
    case one

    /// The amount in `metric`'s ``ElfHookMetric/unit``: `s` or `ms` for a duration, `By` for a
    /// size, `1` for a count.
    public func value(in metric: ElfHookMetric) -> Double {
      switch self {
      case .milliseconds(let milliseconds): metric.unit == "s" ? milliseconds / 1000 : milliseconds
      case .bytes(let bytes): Double(bytes)
      case .one: 1
      }
    }
  }

  public var metric: ElfHookMetric
  public var amount: Amount
  /// In the order the instrument's ``ElfHookMetric/dimensionNames`` lists them; a dimension that
  /// does not apply is left out.
  public var attributes: [MetricAttribute]
}

/// One attribute of a measurement: a dimension name (``MetricDimension``) and its value, typed as
/// the semantic conventions type it (`http.response.status_code` and `server.port` are integers).
public struct MetricAttribute: Sendable, Hashable {
  public enum Value: Sendable, Hashable {
    case text(String)
    case number(Int64)
  }

  public var key: String
  public var value: Value

  public init(_ key: String, _ text: String) {
    self.key = key
    value = .text(text)
  }

  public init<Number: BinaryInteger>(_ key: String, _ number: Number) {
    self.key = key
    value = .number(Int64(number))
  }

  /// The value as text, as a swift-metrics dimension carries it.
  public var text: String {
    switch value {
    case .text(let text): text
    case .number(let number): String(number)
    }
  }
}
