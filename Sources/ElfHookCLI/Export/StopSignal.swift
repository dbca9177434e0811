import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// SIGINT and SIGTERM, caught: `elfhook export --follow` stops between two steps, with its cursor
/// saved, instead of dying mid-write; `--prometheus` closes its endpoint and exits 0. The handler only sets an atomic flag (async-signal-safe).
enum StopSignal {
  private static let requested = Atomic<Bool>(false)

  /// Whether SIGINT or SIGTERM has arrived since ``install()``.
  static var isRequested: Bool { requested.load(ordering: .relaxed) }

  /// Catches SIGINT and SIGTERM, and unblocks them in the calling thread: a parent may have left
  /// them blocked (a test runner's `Process` does), and threads started later inherit the mask.
  /// Call it before any other thread starts. The corresponding C functions are `sigaction` and
  /// `pthread_sigmask`.
  static func install() {
    var action = sigaction()
    action.__sigaction_handler.sa_handler = { _ in StopSignal.requested.store(true, ordering: .relaxed) }
    sigemptyset(&action.sa_mask)
    action.sa_flags = 0
    sigaction(SIGINT, &action, nil)
    sigaction(SIGTERM, &action, nil)
    var unblock = sigset_t()
    sigemptyset(&unblock)
    sigaddset(&unblock, SIGINT)
    sigaddset(&unblock, SIGTERM)
    pthread_sigmask(SIG_UNBLOCK, &unblock, nil)
  }

  /// Sleeps `seconds`, waking early when a stop is requested; returns whether one was.
  @discardableResult
  static func sleep(_ seconds: Double) -> Bool {
    var remaining = seconds
    while remaining > 0 && !isRequested {
      let step = min(remaining, 0.02)
      usleep(UInt32(step * 1_000_000))
      remaining -= step
    }
    return isRequested
  }
}
