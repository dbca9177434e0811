import Testing

@testable import ElfHookCLI

/// How long `elfhook run` leaves the rings between drains (`RunSession.nextWait`): the next drain
/// comes before the busiest ring, filling at the last interval's rate, is a quarter full.
@Suite("Drain pacing")
struct DrainPacingTests {
  @Test(
    "20 ms while rings fill slowly, sooner as the busiest fills faster, never under 5 ms",
    arguments: [
      (20.0, 0.0, 20.0),  // nothing taken: the longest wait
      (20.0, 0.01, 20.0),  // 1% in 20 ms: a quarter would take 500 ms
      (20.0, 0.25, 20.0),  // a quarter in 20 ms: 20 ms again
      (20.0, 0.5, 10.0),  // half in 20 ms: a quarter in 10
      (10.0, 0.5, 5.0),
      (20.0, 1.0, 5.0),  // full: the shortest wait
      (5.0, 0.05, 20.0),  // a busy spell ends: back to 20 ms at once
    ])
  func nextWait(interval: Double, share: Double, expected: Double) {
    #expect(RunSession.nextWait(afterMilliseconds: interval, share: share) == expected)
  }
}
