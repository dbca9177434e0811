/// The durations of one group of records, for percentiles over a whole run, in bounded memory.
///
/// The first ``exactCapacity`` durations are kept, each a `Float` of milliseconds (24 bits of
/// mantissa are far finer than the clock's jitter), and their percentiles are exact: nearest rank,
/// a duration actually seen. Past that (a server recording for hours, a million requests a row)
/// they are counted in a ``DurationHistogram`` instead: 24 KiB a row whatever the number of
/// requests, and percentiles within 0.4%. The maximum stays exact.
struct DurationSamples {
  /// How many durations a group keeps before it counts them in a histogram.
  static let exactCapacity = 10_000

  private var values: [Float] = []
  private var histogram: DurationHistogram?
  /// The largest duration added, exactly as recorded.
  private(set) var maximum: Double = 0

  /// Adds one duration; a record without one (`duration_ms: null` reads as NaN) adds nothing.
  mutating func add(_ milliseconds: Double) {
    guard milliseconds.isFinite else { return }
    maximum = max(maximum, milliseconds)
    if histogram == nil && values.count < Self.exactCapacity {
      values.append(Float(milliseconds))
    } else {
      addToHistogram(Float(milliseconds))
    }
  }

  /// Adds durations as ``add(_:)`` would one by one (`Float`s of finite durations, the largest of
  /// which is `maximum`): the first up to ``exactCapacity`` kept, the others in the histogram.
  mutating func add(contentsOf durations: UnsafeBufferPointer<Float>, maximum largest: Double) {
    guard !durations.isEmpty else { return }
    maximum = max(maximum, largest)
    var rest = durations[...]
    if histogram == nil {
      let exact = min(rest.count, Self.exactCapacity - values.count)
      values.append(contentsOf: rest.prefix(exact))
      rest = rest.dropFirst(exact)
    }
    for value in rest { addToHistogram(value) }
  }

  /// Past the exact durations: kept out of `add`, which is then small enough to be inlined where
  /// every request is counted (three rows per request).
  @inline(never)
  private mutating func addToHistogram(_ milliseconds: Float) {
    if histogram != nil {
      histogram!.add(milliseconds)
    } else {
      var histogram = DurationHistogram()
      for value in values { histogram.add(value) }
      histogram.add(milliseconds)
      self.histogram = histogram
      values = []
    }
  }

  var count: Int { histogram?.count ?? values.count }

  /// Whether the percentiles are exact (durations actually seen), not a histogram's.
  var isExact: Bool { histogram == nil }

  /// The median, the 95th percentile and the maximum, or `nil` before the first duration.
  var quantiles: DurationQuantiles? {
    if let histogram {
      return DurationQuantiles(
        p50: Double(histogram.value(atRank: Self.rank(50, of: histogram.count))),
        p95: Double(histogram.value(atRank: Self.rank(95, of: histogram.count))), maximum: maximum)
    }
    guard !values.isEmpty else { return nil }
    let sorted = values.sorted()
    return DurationQuantiles(
      p50: Double(Self.nearestRank(50, in: sorted)), p95: Double(Self.nearestRank(95, in: sorted)),
      maximum: maximum)
  }

  /// The nearest-rank percentile: the smallest value that at least `percent`% of the values do not
  /// exceed. Unlike an interpolated percentile it is always a duration that was actually seen.
  static func nearestRank(_ percent: Int, in sorted: [Float]) -> Float {
    sorted[rank(percent, of: sorted.count) - 1]
  }

  /// The 1-based nearest rank of `percent`% among `count` values. Integer arithmetic: `0.95 * 60`
  /// in floating point is 57.000000000000007, whose ceiling would be one rank too high.
  static func rank(_ percent: Int, of count: Int) -> Int {
    min(max((percent * count + 99) / 100, 1), count)
  }
}

/// What a table shows of a group's durations, in milliseconds.
struct DurationQuantiles {
  var p50: Double
  var p95: Double
  var maximum: Double
}
