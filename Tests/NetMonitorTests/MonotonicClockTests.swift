import Testing

@testable import NetMonitor

@Suite("Clock")
struct MonotonicClockTests {
  @Test("monotonic readings never go back; wall clock is after 2020")
  func clocks() {
    let first = MonotonicClock.now()
    let second = MonotonicClock.now()
    #expect(second >= first)
    #expect(MonotonicClock.unixNow() > 1_577_836_800_000_000_000)
    #expect(MonotonicClock.milliseconds(from: 1_000_000, to: 3_500_000) == 2.5)
    #expect(MonotonicClock.milliseconds(from: 5, to: 1) == 0)
  }
}
