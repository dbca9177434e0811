#if canImport(Glibc)
  import Glibc
#endif

/// The time axis a report's bars share: from the earliest start to the latest end, with round tick
/// marks (1, 2 or 5 times a power of ten, in milliseconds).
struct TimeAxis {
  var startUnixNs: UInt64
  /// The axis's length in milliseconds; never 0, so positions can divide by it.
  var spanMs: Double

  /// - Parameter intervals: Each record's start (ns since the epoch) and length (ms).
  init(_ intervals: [(startUnixNs: UInt64, durationMs: Double)]) {
    startUnixNs = intervals.map(\.startUnixNs).min() ?? 0
    let start = startUnixNs
    let end =
      intervals.map {
        Double($0.startUnixNs - start) / 1_000_000 + ($0.durationMs.isFinite ? max($0.durationMs, 0) : 0)
      }.max() ?? 0
    spanMs = max(end, 0.001)
  }

  /// Milliseconds from the axis's start to `unixNs`.
  func offsetMs(_ unixNs: UInt64) -> Double {
    Double(unixNs - startUnixNs) / 1_000_000
  }

  /// Where `ms` (from the axis's start) lies, in percent of the axis.
  func percent(_ ms: Double) -> Double {
    ms / spanMs * 100
  }

  /// The distance between ticks: about six of them across the axis.
  var tickMs: Double {
    let rough = spanMs / 6
    let power = pow(10, floor(log10(rough)))
    return [1.0, 2, 5, 10].map { $0 * power }.first { $0 >= rough } ?? 10 * power
  }
}
