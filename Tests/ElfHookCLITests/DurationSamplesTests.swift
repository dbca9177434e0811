import Testing

@testable import ElfHookCLI

/// A row keeps its durations exactly up to `DurationSamples.exactCapacity`, then in a histogram:
/// bounded memory for a server recorded for hours, percentiles within 0.4%.
@Suite("Duration percentiles in bounded memory")
struct DurationSamplesTests {
  @Test("exact nearest-rank percentiles up to the capacity")
  func exactUpToCapacity() {
    var samples = DurationSamples()
    for value in (1...DurationSamples.exactCapacity).reversed() { samples.add(Double(value)) }
    #expect(samples.isExact && samples.count == DurationSamples.exactCapacity)
    let quantiles = samples.quantiles
    #expect(quantiles?.p50 == Double(DurationSamples.exactCapacity / 2))
    #expect(quantiles?.p95 == Double(DurationSamples.exactCapacity * 95 / 100))
    #expect(quantiles?.maximum == Double(DurationSamples.exactCapacity))
  }

  @Test("beyond it, a histogram: percentiles within 0.4%, the maximum exact, no duration lost")
  func histogramBeyond() {
    var samples = DurationSamples()
    var generator = SystemRandomNumberGenerator()
    let values = (1...50_000).map { Double($0) / 7 }.shuffled(using: &generator)
    for value in values { samples.add(value) }
    samples.add(.nan)  // a record without a duration adds nothing
    #expect(!samples.isExact && samples.count == values.count)
    let quantiles = samples.quantiles
    let sorted = values.sorted()
    for (percent, measured) in [(50, quantiles?.p50), (95, quantiles?.p95)] {
      let exact = sorted[DurationSamples.rank(percent, of: sorted.count) - 1]
      #expect(abs((measured ?? 0) / exact - 1) <= 0.004, "p\(percent): \(measured ?? 0) for \(exact)")
    }
    #expect(quantiles?.maximum == 50_000.0 / 7)
  }

  @Test("durations out of the histogram's range count at its ends")
  func outOfRange() {
    var histogram = DurationHistogram()
    for value: Float in [0, 1e-12, 1e12, .greatestFiniteMagnitude] { histogram.add(value) }
    #expect(histogram.count == 4)
    #expect(histogram.value(atRank: 1) == DurationHistogram.midpoint(of: 0))
    #expect(histogram.value(atRank: 4) == DurationHistogram.midpoint(of: DurationHistogram.bucketCount - 1))
  }
}
