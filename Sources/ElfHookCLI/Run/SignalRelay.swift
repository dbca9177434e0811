import Foundation

/// The signals `elfhook run` waits for instead of dying of them: blocked while the command runs,
/// and read with sigtimedwait, which also paces the draining of the record rings.
final class SignalRelay {
  private var watched = sigset_t()
  private var previous = sigset_t()

  /// Whether SIGPIPE was ignored when elfhook started: the command inherits that, not elfhook's own
  /// choice to ignore it (so that writing to a closed stderr cannot kill elfhook).
  let callerIgnoredSIGPIPE: Bool

  init() {
    callerIgnoredSIGPIPE = ChildProcess.isIgnored(SIGPIPE)
    signal(SIGPIPE, SIG_IGN)
    sigemptyset(&watched)
    for signal in ChildProcess.forwardedSignals + [SIGCHLD] { sigaddset(&watched, signal) }
    sigprocmask(SIG_BLOCK, &watched, &previous)
  }

  func restore() { sigprocmask(SIG_SETMASK, &previous, nil) }

  enum Event {
    case timeout
    case childStateChanged
    /// A signal for the child: forward it when `fromProcess` (kill, not the terminal).
    case signal(Int32, fromProcess: Bool)
  }

  /// Waits at most `milliseconds` for a signal.
  func wait(milliseconds: Int) -> Event {
    var info = siginfo_t()
    var timeout = timespec(tv_sec: milliseconds / 1000, tv_nsec: (milliseconds % 1000) * 1_000_000)
    let signal = sigtimedwait(&watched, &info, &timeout)
    if signal < 0 { return .timeout }
    if signal == SIGCHLD { return .childStateChanged }
    // SI_USER (kill), SI_QUEUE and SI_TKILL are ≤ 0; the terminal's signals come as SI_KERNEL,
    // and the terminal sent them to the child as well.
    return .signal(signal, fromProcess: info.si_code <= 0)
  }
}
