import Glibc

/// Says whether entries may have been created in, moved into or removed from a directory since the
/// last look, from the directory's modification time (one `stat`), so that `elfhook run` lists the
/// rings' directory again only then: listing it at every drain, 200 times a second under load, was
/// 13% of the consumer's CPU time.
///
/// The kernel stamps a directory with a coarse clock (a scheduler tick, 1–10 ms), so an entry made
/// in the tick of the last look leaves the time as that look saw it: while the time seen is within
/// ``racyNanoseconds`` of the clock, every look says "maybe". (inotify answered the same question,
/// but closing an inotify descriptor that had a watch waits for an RCU grace period: 0.1–16 ms
/// measured here, idle, at every `elfhook run`'s exit.) A directory that cannot be read always
/// says "maybe".
final class DirectoryWatch {
  /// Longer than any tick the kernel stamps with (HZ=100: 10 ms).
  static let racyNanoseconds: Int64 = 50_000_000

  private let path: String
  private var seen: (seconds: Int, nanoseconds: Int) = (0, 0)
  /// The time seen was too close to the clock to rule out an entry made in the same tick.
  private var racy = true

  init(_ path: String) {
    self.path = path
  }

  /// Whether something may have appeared since the last call (always, the first time).
  func changed() -> Bool {
    var status = stat()
    guard stat(path, &status) == 0 else { return true }
    var now = timespec()
    clock_gettime(CLOCK_REALTIME, &now)
    let modified = (seconds: status.st_mtim.tv_sec, nanoseconds: status.st_mtim.tv_nsec)
    let changed = racy || modified != seen
    seen = modified
    let age = Int64(now.tv_sec - modified.seconds) * 1_000_000_000 + Int64(now.tv_nsec - modified.nanoseconds)
    racy = age < Self.racyNanoseconds  // a clock set back makes every look "maybe" too
    return changed
  }
}
