import Testing

@testable import ElfHookCLI

@Suite("Units")
struct UnitsTests {
  @Test(
    "durations keep about three significant digits",
    arguments: [
      (0.0004, "0 µs"), (0.42, "420 µs"), (1.234, "1.23 ms"), (12.34, "12.3 ms"), (123.4, "123 ms"),
      (1_234, "1.23 s"), (12_340, "12.3 s"), (125_000, "2m 05s"), (7_380_000, "2h 03m"), (Double.nan, "-"),
    ])
  func durations(milliseconds: Double, text: String) {
    #expect(Units.duration(milliseconds) == text)
  }

  @Test(
    "bytes in binary units",
    arguments: [
      (0, "0 B"), (1023, "1023 B"), (1024, "1.0 KiB"), (4_198, "4.1 KiB"), (150_000, "146 KiB"),
      (3 * 1_048_576 + 524_288, "3.5 MiB"), (5 << 40, "5.0 TiB"),
    ] as [(UInt64, String)])
  func bytes(count: UInt64, text: String) {
    #expect(Units.bytes(count) == text)
  }

  @Test("counts, rates, clocks and UTC times")
  func others() {
    #expect(Units.count(0) == "0")
    #expect(Units.count(999) == "999")
    #expect(Units.count(1_234_567) == "1,234,567")
    #expect(Units.count(-4_321) == "-4,321")
    #expect(Units.rate(149, seconds: 10) == "14.9/s")
    #expect(Units.rate(1, seconds: 0) == "-/s")
    #expect(Units.clock(seconds: 83) == "01:23")
    #expect(Units.clock(seconds: 3723) == "1:02:03")
    #expect(Units.utcTime(unixNs: 1_767_225_600_123_456_789) == "2026-01-01 00:00:00.123 UTC")
    #expect(Units.decimal(-0.04, digits: 1) == "0.0")
    #expect(Units.decimal(2.5, digits: 0) == "3")
  }
}
