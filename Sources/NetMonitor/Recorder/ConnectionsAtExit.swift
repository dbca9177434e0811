import CNetMonitor
import Glibc

/// A process that exits with connections open never closes them itself (the kernel does): without
/// this, their connection records would never be written. At `exit` (an `atexit` handler, so not
/// at `_exit` or death by a signal), every connection still tracked gets its record, as if closed
/// then; with an in-process recorder, the records are handed to the sink too.
enum ConnectionsAtExit {
  private static let installed: Void = { atexit { ConnectionsAtExit.recordOpenConnections() } }()

  /// Registers the handler, once.
  static func install() { _ = installed }

  static func recordOpenConnections() {
    let savedErrno = cnm_errno()
    cnm_guard_enter()
    defer {
      cnm_guard_leave()
      cnm_set_errno(savedErrno)
    }
    for fd in 0..<Int32(bitPattern: cnm_get_tracked_limit()) where ConnectionTable.tracked(fd) != nil {
      Traffic.closed(fd)
    }
    Recorder.drainIfRunning()
  }
}
