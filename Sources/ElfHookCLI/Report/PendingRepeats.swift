import NetMonitor

/// Repeats of a summary's last request, counted from their ring slots and not yet added to the
/// three groups they belong to (all requests, the request's host, its endpoint): added a batch at a
/// time, not one request at a time in three places — which was most of what counting a repeat
/// cost. Only what those groups keep is kept: counts, byte totals, the largest duration exactly,
/// and each duration as the `Float` `DurationSamples` would keep; the groups end up the same
/// either way (their percentiles do not depend on the order of the durations).
///
/// `TransactionSummary` adds them before it counts anything else, and at the end of a drain, so
/// it is complete whenever none of its methods is running.
struct PendingRepeats {
  static let capacity = 256

  private(set) var count = 0
  private(set) var errors = 0
  private(set) var bytesSent: UInt64 = 0
  private(set) var bytesReceived: UInt64 = 0
  /// The largest duration, in milliseconds, as recorded.
  private(set) var maximumMs = 0.0
  private var durations = InlineArray<256, Float>(repeating: 0)

  var isFull: Bool { count == Self.capacity }

  /// Counts one repeat (`failed`: its `isFailure`); `durationMs` is finite, as a slot's always is.
  mutating func add(_ http: HTTPRecordView, failed: Bool) {
    durations[count] = Float(http.durationMs)
    count += 1
    if failed { errors += 1 }
    bytesSent += http.requestBytes
    bytesReceived += http.responseBytes
    maximumMs = max(maximumMs, http.durationMs)
  }

  /// Forgets the repeats (once added to their rows); the durations' storage is overwritten next.
  mutating func removeAll() {
    count = 0
    errors = 0
    bytesSent = 0
    bytesReceived = 0
    maximumMs = 0
  }

  /// The durations counted, in the order they came.
  func withDurations<Result>(_ body: (UnsafeBufferPointer<Float>) -> Result) -> Result {
    withUnsafeBytes(of: durations) { raw in
      body(UnsafeBufferPointer(start: raw.baseAddress!.assumingMemoryBound(to: Float.self), count: count))
    }
  }
}
