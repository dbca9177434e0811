/// One cumulative explicit-bucket histogram stream: the values recorded under one attribute set
/// (a counter's: a histogram without boundaries, its count the total).
/// Codable: the state file keeps it, so that counts survive a restart of the exporter.
struct HistogramPoint: Codable, Hashable, Sendable {
  var attributes: [Attribute]
  /// `boundaries.count + 1` counts: bucket `i` holds values in (`boundaries[i-1]`, `boundaries[i]`].
  var bucketCounts: [UInt64]
  var count: UInt64 = 0
  var sum: Double = 0
  /// The smallest and largest value recorded (`nil` before the first; JSON has no infinity).
  var min: Double?
  var max: Double?

  init(attributes: [Attribute], bucketCount: Int) {
    self.attributes = attributes
    bucketCounts = Array(repeating: 0, count: bucketCount)
  }

  /// Adds one value, in the bucket OTLP's explicit bounds put it in (upper bound inclusive).
  mutating func record(_ value: Double, boundaries: [Double]) {
    let bucket = boundaries.firstIndex { value <= $0 } ?? boundaries.count
    bucketCounts[bucket] += 1
    count += 1
    sum += value
    min = Swift.min(min ?? value, value)
    max = Swift.max(max ?? value, value)
  }

  /// Whether the point was kept with `boundaries` (`boundaries.count + 1` buckets).
  func fits(_ boundaries: [Double]) -> Bool { bucketCounts.count == boundaries.count + 1 }

  /// The count as an OTLP sum's data point (a counter is kept as a histogram without buckets),
  /// cumulative from `startUnixNs` to `timeUnixNs`.
  func otlpSum(startUnixNs: UInt64, timeUnixNs: UInt64) -> OTLPNumberPoint {
    var point = OTLPNumberPoint()
    point.attributes = attributes.map(\.otlp)
    point.startTimeUnixNano = startUnixNs
    point.timeUnixNano = timeUnixNs
    point.asInt = Int64(clamping: count)
    return point
  }

  /// The OTLP data point, cumulative from `startUnixNs` to `timeUnixNs`.
  func otlp(boundaries: [Double], startUnixNs: UInt64, timeUnixNs: UInt64) -> OTLPHistogramPoint {
    var point = OTLPHistogramPoint()
    point.attributes = attributes.map(\.otlp)
    point.startTimeUnixNano = startUnixNs
    point.timeUnixNano = timeUnixNs
    point.count = count
    point.sum = sum
    point.bucketCounts = bucketCounts
    point.explicitBounds = boundaries
    if let min, let max {
      point.min = min
      point.max = max
    }
    return point
  }
}
