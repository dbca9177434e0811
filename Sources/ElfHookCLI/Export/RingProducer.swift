import Foundation

#if canImport(Glibc)
  import Glibc
#endif

/// Whether the process that writes a record ring still runs: what `elfhook export` asks before it
/// removes a ring it has exported to its end.
///
/// A ring's header names its process (pid) and when it was created. The process runs when that
/// pid exists, is not a zombie, and started no later than the ring was created (a pid used again
/// by a younger process is not the ring's). The start time comes from `/proc/PID/stat`
/// (clock ticks since boot) and `btime` in `/proc/stat` (seconds), so it is known to about a
/// second: a process that took the pid within a second of the ring's creation counts as the
/// ring's, which only keeps the ring until that process exits too.
///
/// The pid is the one the producer saw: the exporter must share its pid namespace (a container
/// sidecar: `shareProcessNamespace: true` in Kubernetes, `--pid container:NAME` with Docker), or
/// every ring's process looks gone.
enum RingProducer {
  /// See the type's summary. The corresponding C functions are `kill` (signal 0) and reads of
  /// `/proc/PID/stat` and `/proc/stat`.
  static func isRunning(pid: Int32, ringCreatedUnixNs: UInt64) -> Bool {
    guard pid > 0 else { return false }
    if kill(pid, 0) != 0 && errno == ESRCH { return false }
    guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8) else {
      return access("/proc/\(pid)", F_OK) == 0  // no /proc to read: the pid exists, so it runs
    }
    // "pid (comm) state ppid …": comm may hold spaces and parentheses, so fields count from the last ')'.
    guard let close = stat.lastIndex(of: ")") else { return true }
    let fields = stat[stat.index(after: close)...].split(separator: " ")
    guard fields.count > 19 else { return true }
    if fields[0] == "Z" || fields[0] == "X" { return false }
    guard let ticks = UInt64(fields[19]), let boot = bootUnixSeconds() else { return true }
    let hertz = UInt64(max(sysconf(Int32(_SC_CLK_TCK)), 1))
    let startedUnixNs = boot * 1_000_000_000 + ticks * (1_000_000_000 / hertz)
    return startedUnixNs <= ringCreatedUnixNs + 1_000_000_000
  }

  /// `btime` of `/proc/stat`: when the system booted, in seconds since the Unix epoch.
  private static func bootUnixSeconds() -> UInt64? {
    guard let text = try? String(contentsOfFile: "/proc/stat", encoding: .utf8) else { return nil }
    for line in text.split(separator: "\n") where line.hasPrefix("btime ") {
      return UInt64(line.dropFirst(6).trimmingCharacters(in: .whitespaces))
    }
    return nil
  }
}
