#if canImport(Glibc)
  import Glibc
#endif

/// Numbers as people read them in a report: `420 µs`, `12.3 ms`, `1.25 s`, `4.1 KiB`, `1,234`.
/// Each keeps about three significant digits: enough to compare rows at a glance.
enum Units {
  /// A duration given in milliseconds; `-` for a missing one (NaN).
  static func duration(_ milliseconds: Double) -> String {
    guard milliseconds.isFinite else { return "-" }
    let ms = max(milliseconds, 0)
    if ms < 1 { return decimal(ms * 1000, digits: 0) + " µs" }
    if ms < 1000 { return decimal(ms, digits: ms < 10 ? 2 : ms < 100 ? 1 : 0) + " ms" }
    let seconds = ms / 1000
    if seconds < 100 { return decimal(seconds, digits: seconds < 10 ? 2 : 1) + " s" }
    let whole = Int(seconds.rounded())
    if whole < 3600 { return "\(whole / 60)m " + twoDigits(whole % 60) + "s" }
    return "\(whole / 3600)h " + twoDigits(whole / 60 % 60) + "m"
  }

  /// A byte count in binary units (KiB = 1024 bytes), as `ls -h` and `free -h` print them.
  static func bytes(_ count: UInt64) -> String {
    if count < 1024 { return "\(count) B" }
    var value = Double(count) / 1024
    var unit = 0
    let units = ["KiB", "MiB", "GiB", "TiB"]
    while value >= 1024 && unit < units.count - 1 {
      value /= 1024
      unit += 1
    }
    return decimal(value, digits: value < 100 ? 1 : 0) + " " + units[unit]
  }

  /// An integer with thousands separators: `1,234,567`.
  static func count<Number: BinaryInteger>(_ number: Number) -> String {
    let digits = String(number.magnitude)
    var text = ""
    for (index, digit) in digits.enumerated() {
      if index > 0 && (digits.count - index) % 3 == 0 { text += "," }
      text.append(digit)
    }
    return (number < 0 ? "-" : "") + text
  }

  /// Events per second: `14.9/s`.
  static func rate(_ events: Int, seconds: Double) -> String {
    guard seconds > 0 else { return "-/s" }
    let perSecond = Double(events) / seconds
    return decimal(perSecond, digits: perSecond < 100 ? 1 : 0) + "/s"
  }

  /// An elapsed time as a clock: `01:23`, `1:02:03`.
  static func clock(seconds: Double) -> String {
    let whole = seconds.isFinite ? max(Int(seconds), 0) : 0
    let minutesAndSeconds = twoDigits(whole / 60 % 60) + ":" + twoDigits(whole % 60)
    return whole >= 3600 ? "\(whole / 3600):" + minutesAndSeconds : minutesAndSeconds
  }

  /// A record time as UTC, to the millisecond: `2026-01-01 12:00:00.123 UTC`.
  ///
  /// The corresponding C function is `gmtime_r`.
  static func utcTime(unixNs: UInt64) -> String {
    var seconds = time_t(unixNs / 1_000_000_000)
    var parts = tm()
    gmtime_r(&seconds, &parts)
    let milliseconds = Int(unixNs / 1_000_000 % 1000)
    let date = "\(parts.tm_year + 1900)-" + twoDigits(Int(parts.tm_mon) + 1) + "-" + twoDigits(Int(parts.tm_mday))
    let time = twoDigits(Int(parts.tm_hour)) + ":" + twoDigits(Int(parts.tm_min)) + ":" + twoDigits(Int(parts.tm_sec))
    let fraction = String(repeating: "0", count: 3 - String(milliseconds).count) + String(milliseconds)
    return "\(date) \(time).\(fraction) UTC"
  }

  /// `value` rounded to `digits` decimals, without Foundation's `String(format:)`.
  static func decimal(_ value: Double, digits: Int) -> String {
    guard value.isFinite else { return "-" }
    var scale: UInt64 = 1
    for _ in 0..<digits { scale *= 10 }
    let scaled = (abs(value) * Double(scale)).rounded()
    guard scaled < 1e18 else { return "\(value)" }
    let units = UInt64(scaled)
    var text = (value < 0 && units > 0 ? "-" : "") + String(units / scale)
    if digits > 0 {
      let fraction = String(units % scale)
      text += "." + String(repeating: "0", count: digits - fraction.count) + fraction
    }
    return text
  }

  private static func twoDigits(_ number: Int) -> String {
    number < 10 ? "0\(number)" : "\(number)"
  }
}
