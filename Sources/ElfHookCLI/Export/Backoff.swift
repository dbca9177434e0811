/// Exponential backoff between attempts: 100 ms, doubling, capped (5 s by default).
struct Backoff: Sendable {
  let initial: Double
  let cap: Double
  private(set) var next: Double

  init(initial: Double = 0.1, cap: Double = 5) {
    self.initial = initial
    self.cap = cap
    next = initial
  }

  /// The delay before the next attempt, in seconds; each call doubles the one after.
  mutating func delay() -> Double {
    defer { next = min(next * 2, cap) }
    return next
  }

  /// Back to the initial delay, after a success.
  mutating func reset() { next = initial }
}
