import CNetMonitor
import Glibc

/// Timestamps for the recorder: monotonic nanoseconds for durations, wall-clock nanoseconds for
/// `start_unix_ns`. Both read through the vDSO (no system call).
enum MonotonicClock {
  /// Nanoseconds on `CLOCK_MONOTONIC`. The corresponding C function is `clock_gettime`.
  @inline(__always)
  static func now() -> UInt64 {
    var time = timespec()
    clock_gettime(CLOCK_MONOTONIC, &time)
    return UInt64(time.tv_sec) &* 1_000_000_000 &+ UInt64(time.tv_nsec)
  }

  /// When the bytes being read moved, on the same clock: now, or, for a call the injected library
  /// handed to the monitor, when that call moved them (`cnm_call_time`).
  @inline(__always)
  static func ofCall() -> UInt64 { cnm_call_time() }

  /// Nanoseconds since the Unix epoch on `CLOCK_REALTIME`.
  @inline(__always)
  static func unixNow() -> UInt64 {
    var time = timespec()
    clock_gettime(CLOCK_REALTIME, &time)
    return UInt64(time.tv_sec) &* 1_000_000_000 &+ UInt64(time.tv_nsec)
  }

  /// Milliseconds between two monotonic readings, as the records carry durations.
  @inline(__always)
  static func milliseconds(from start: UInt64, to end: UInt64) -> Double {
    end >= start ? Double(end &- start) / 1_000_000 : 0
  }
}
