import Foundation
import NetMonitor

/// What `elfhook run` does while the command runs: drains the rings, writes records where they
/// go, keeps the summary, refreshes the live view.
final class RunSession {
  private let collector: RingCollector
  private var outputFile: RecordOutputFile?
  private let format: RunCommand.Format
  private let live: Bool
  private var summary = TransactionSummary()
  private let started = MonotonicSeconds.now()
  private var lastLiveUpdate = 0.0
  private var liveLinesShown = 0

  /// How long the rings are left between drains: 20 ms when they fill slowly, so that an idle run
  /// wakes 50 times a second (each wakeup costs ~50 µs of CPU in this VM's kernel, records or
  /// not: an idle run uses 2.2 ms of CPU a second, 7.5 ms at 5 ms), and shorter when a ring filled
  /// faster: at the last interval's rate, the next drain comes before the busiest ring is a
  /// quarter full. The default ring holds 4,096 records, so a server's burst after a quiet spell
  /// (80k requests a second in `bench-nginx`) fills 1,600 of them before the first drain sees it;
  /// with rings of 1,024 and 20 ms, such a burst dropped records (1,159 of 6.7 M), hence the 5 ms
  /// of old.
  static let longestWaitMilliseconds = 20.0
  static let shortestWaitMilliseconds = 5.0
  /// The wait before the next drain, and when the last one ran.
  private var waitMilliseconds = longestWaitMilliseconds
  private var lastDrain = MonotonicSeconds.now()
  /// The JSON lines of a drain (see `drain(final:)`).
  private var lines: [UInt8] = []

  init(collector: RingCollector, outputFile: RecordOutputFile?, format: RunCommand.Format, live: Bool) {
    self.collector = collector
    self.outputFile = outputFile
    self.format = format
    self.live = live
  }

  /// Drains and relays signals until the child exits, then until the processes it left running
  /// (adopted by elfhook: `elfhook_adopt_orphans`) exit too, or a signal ends the wait; returns
  /// how the child ended.
  func supervise(_ child: ChildProcess, signals: SignalRelay) -> ChildExit {
    var exit: ChildExit?
    while true {
      switch signals.wait(milliseconds: Int(waitMilliseconds.rounded())) {
      case .signal(let signal, let fromProcess):
        if let exit { return exit }  // only the command's leftovers remain: stop waiting for them
        if fromProcess { kill(child.pid, signal) }
      case .timeout:
        break  // a child that exits sends SIGCHLD (blocked, so it waits for the next `wait`)
      case .childStateChanged:
        switch reapChildren(command: child.pid) {
        case .commandExited(let status):
          exit = ChildExit(waitStatus: status)
          if case .noneLeft = reapChildren(command: child.pid) { return exit! }
          Terminal.say(
            "the command exited; waiting for the processes it left running (send SIGINT or SIGTERM to stop waiting)")
        case .noneLeft:
          if let exit { return exit }
          return ChildExit(waitStatus: 0x7f00)  // the command vanished without a status
        case .running:
          break
        }
      }
      drain(final: false)
      if live { refreshLiveView() }
    }
  }

  private enum Reaped {
    case commandExited(Int32)
    case noneLeft
    case running
  }

  /// Reaps every child that has exited (the command, or a descendant it left behind).
  private func reapChildren(command: pid_t) -> Reaped {
    while true {
      var status: Int32 = 0
      let reaped = waitpid(-1, &status, WNOHANG)
      if reaped == command { return .commandExited(status) }
      if reaped > 0 { continue }
      if reaped < 0 && errno == EINTR { continue }
      return reaped < 0 ? .noneLeft : .running
    }
  }

  /// The last records (a process killed mid-record leaves a slot that is passed over), then the
  /// summary.
  func finish() {
    drain(final: true)
    summary.droppedRecords = collector.droppedRecords
    summary.dropReason = collector.dropReason
    if live { clearLiveView() }
    if format == .table {
      Terminal.write(renderSummary(summary, width: Terminal.width, color: Terminal.supportsColor) + "\n")
    }
  }

  /// A failure to write the output file is said once and ends the file, never the command: the
  /// command keeps running, and the summary still comes at the end.
  ///
  /// The JSON lines of one drain are written together, from one buffer kept for the next drain.
  /// The summary and the buffer are taken out of the session for the drain: the closure updates
  /// locals, not (with a checked access each time) the session's properties.
  ///
  /// The summary gets each record in its slot: one that repeats the last request, or goes to an
  /// endpoint it knows, is counted from its numbers, never decoded
  /// (`TransactionSummary.add(slotsFrom:)`); only the JSON lines, when asked for, decode them all.
  private func drain(final: Bool) {
    let now = MonotonicSeconds.now()
    let interval = (now - lastDrain) * 1000
    lastDrain = now
    // Most wakeups of a quiet run find nothing: they return before the summary is taken out.
    let hasRecords = collector.prepareDrain(final: final)
    guard final || hasRecords else {
      waitMilliseconds = Self.longestWaitMilliseconds
      return
    }
    defer { waitMilliseconds = Self.nextWait(afterMilliseconds: interval, share: collector.fullestShare) }
    var summary = TransactionSummary()
    swap(&summary, &self.summary)
    var lines: [UInt8] = []
    swap(&lines, &self.lines)
    defer { swap(&lines, &self.lines) }
    lines.removeAll(keepingCapacity: true)
    let writesLines = outputFile != nil || format == .jsonl
    _ = summary.add(slotsFrom: { addToSummary in
      guard writesLines else { return collector.drainSlots(final: final, addToSummary) }
      return collector.drainSlots(final: final) { slot in
        addToSummary(slot)
        slot.withTransaction { $0.appendJSONLine(to: &lines) }
      }
    })
    swap(&summary, &self.summary)
    guard !lines.isEmpty else { return }
    do {
      try outputFile?.append(lines)
    } catch {
      Terminal.say("\(error); records are no longer written to it")
      outputFile = nil
    }
    if format == .jsonl { Terminal.write(String(decoding: lines, as: UTF8.self)) }
  }

  /// The wait after a drain that found the busiest ring `share` full, `milliseconds` after the
  /// drain before it (see ``longestWaitMilliseconds``).
  static func nextWait(afterMilliseconds milliseconds: Double, share: Double) -> Double {
    guard share > 0 else { return Self.longestWaitMilliseconds }
    return min(Self.longestWaitMilliseconds, max(Self.shortestWaitMilliseconds, milliseconds * 0.25 / share))
  }

  private func refreshLiveView() {
    let elapsed = MonotonicSeconds.now() - started
    guard elapsed - lastLiveUpdate >= 1 else { return }
    lastLiveUpdate = elapsed
    summary.droppedRecords = collector.droppedRecords
    let lines = renderLiveView(summary, elapsedSeconds: elapsed, width: Terminal.width)
    if Terminal.isTerminal {
      // Up over the previous view, clear to the end of the screen, draw the new one.
      let up = liveLinesShown > 0 ? "\u{1B}[\(liveLinesShown)A\u{1B}[J" : ""
      Terminal.write(up + lines.joined(separator: "\n") + "\n")
      liveLinesShown = lines.count
    } else {
      Terminal.write(lines.joined(separator: "\n") + "\n")
    }
  }

  private func clearLiveView() {
    if Terminal.isTerminal && liveLinesShown > 0 { Terminal.write("\u{1B}[\(liveLinesShown)A\u{1B}[J") }
    liveLinesShown = 0
  }
}

/// Seconds on the monotonic clock.
enum MonotonicSeconds {
  static func now() -> Double {
    var time = timespec()
    clock_gettime(CLOCK_MONOTONIC, &time)
    return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
  }
}
