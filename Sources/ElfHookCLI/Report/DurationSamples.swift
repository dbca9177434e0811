/// The durations of one group of records, for exact percentiles over a whole run.
///
/// Each duration is kept as a `Float` of milliseconds: 4 bytes a record is small enough for the
/// millions of records a long-running server produces, and 24 bits of mantissa are far finer than
/// the clock's jitter.
struct DurationSamples {
  private(set) var values: [Float] = []
  /// The largest duration added, exactly as recorded.
  private(set) var maximum: Double = 0

  /// Adds one duration; a record without one (`duration_ms: null` reads as NaN) adds nothing.
  mutating func add(_ milliseconds: Double) {
    guard milliseconds.isFinite else { return }
    values.append(Float(milliseconds))
    maximum = max(maximum, milliseconds)
  }

  var count: Int { values.count }

  /// The median, the 95th percentile and the maximum, or `nil` before the first duration.
  var quantiles: DurationQuantiles? {
    guard !values.isEmpty else { return nil }
    let sorted = values.sorted()
    return DurationQuantiles(
      p50: Double(Self.nearestRank(50, in: sorted)), p95: Double(Self.nearestRank(95, in: sorted)),
      maximum: maximum)
  }

  /// The nearest-rank percentile: the smallest value that at least `percent`% of the values do not
  /// exceed. Unlike an interpolated percentile it is always a duration that was actually seen.
  /// Integer arithmetic: `0.95 * 60` in floating point is 57.000000000000007, whose ceiling would
  /// be one rank too high.
  static func nearestRank(_ percent: Int, in sorted: [Float]) -> Float {
    let rank = (percent * sorted.count + 99) / 100
    return sorted[min(max(rank, 1), sorted.count) - 1]
  }
}

/// What a table shows of a group's durations, in milliseconds.
struct DurationQuantiles {
  var p50: Double
  var p95: Double
  var maximum: Double
}
