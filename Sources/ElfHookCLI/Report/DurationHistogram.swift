/// Durations counted in buckets of a fixed log scale, in bounded memory: 128 buckets per doubling,
/// from 2⁻²⁰ ms (about 1 ns) up to 2²⁸ ms (about 75 hours), 6,144 in all (24 KiB). A bucket is the
/// top 16 bits of the duration's `Float` (sign, exponent, 7 bits of mantissa), so it is found with
/// a shift, and it spans under 0.8% of its values: the midpoint stands for all of them within 0.4%.
/// Shorter durations count in the first bucket, longer ones in the last.
struct DurationHistogram {
  /// The bucket of 2⁻²⁰ ms: the `Float`'s top 16 bits for exponent −20 and mantissa 0.
  private static let firstKey = UInt32(127 - 20) << 7
  static let bucketCount = 48 << 7

  private var counts = [UInt32](repeating: 0, count: bucketCount)
  private(set) var count = 0

  mutating func add(_ milliseconds: Float) {
    let key = milliseconds.bitPattern >> 16
    let index = key < Self.firstKey ? 0 : min(Int(key - Self.firstKey), Self.bucketCount - 1)
    counts[index] &+= 1
    count += 1
  }

  /// The midpoint of the bucket holding the value of `rank` (1-based) in ascending order.
  func value(atRank rank: Int) -> Float {
    var seen = 0
    for index in counts.indices where counts[index] > 0 {
      seen += Int(counts[index])
      if seen >= rank { return Self.midpoint(of: index) }
    }
    return Self.midpoint(of: Self.bucketCount - 1)
  }

  /// The `Float` halfway through bucket `index` (its top 16 bits, then a 1 and zeros).
  static func midpoint(of index: Int) -> Float {
    Float(bitPattern: (firstKey + UInt32(index)) << 16 | 0x8000)
  }
}
