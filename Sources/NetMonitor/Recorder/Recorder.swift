import CNetMonitor
import Glibc
import Synchronization

/// The recorder thread: drains the queue the hooks fill, assembles ``Transaction``s and hands them
/// to the sink. It runs with the monitor's guard set, so its own I/O is never recorded.
enum Recorder {
  private static let connectionIDs = Atomic<UInt64>(0)

  /// A connection id, unique in the process.
  static func nextConnectionID() -> UInt64 {
    connectionIDs.add(1, ordering: .relaxed).newValue
  }

  /// The ids up to `last` are taken (by the injected library, before the monitor was loaded).
  static func continueConnectionIDs(after last: UInt64) {
    _ = connectionIDs.max(last, ordering: .relaxed)
  }

  /// What the thread needs: the sink and the process name. Set once by `start`.
  private struct State: ~Copyable {
    var sink: (any TransactionSink)?
    var process = ""
    var running = false
  }

  /// Held while records are drained, by the thread or by `flush`.
  private static let state = Mutex(State())

  /// How long the thread sleeps when the queue is empty. The hooks cannot wake it (that would be
  /// I/O on the host's path), so it polls.
  private static let idleNanoseconds = 5_000_000

  static func start(sink: any TransactionSink, process: String) -> Bool {
    let alreadyRunning = state.withLock { state in
      state.sink = sink
      state.process = process
      defer { state.running = true }
      return state.running
    }
    if alreadyRunning { return true }
    var thread = pthread_t()
    return pthread_create(&thread, nil, { _ in
      cnm_guard_enter()
      while true {
        Recorder.drain()
        var pause = timespec(tv_sec: 0, tv_nsec: Recorder.idleNanoseconds)
        nanosleep(&pause, nil)
      }
    }, nil) == 0
  }

  /// Hands every queued record to the sink now. Returns how many were handed over.
  @discardableResult
  static func drain() -> Int {
    guard let queue = cnm_record_queue() else { return 0 }
    cnm_guard_enter()
    defer { cnm_guard_leave() }
    return state.withLock { state in
      var count = 0
      var cache = RecordTextCache()
      while let slot = cnm_queue_peek(queue) {
        let transaction = RawRecord.transaction(at: slot, process: state.process, cache: &cache)
        cnm_queue_release(queue)
        if let transaction {
          state.sink?.record(transaction)
          count += 1
        }
      }
      if count > 0 { state.sink?.flush() }
      return count
    }
  }

  /// `drain`, when the recorder thread runs (records go to a sink in this process; a record ring's
  /// records are left for its consumer).
  static func drainIfRunning() {
    if state.withLock({ $0.running }) { drain() }
  }

  /// Records the hooks could not queue because the queue was full.
  static var dropped: UInt64 {
    guard let queue = cnm_record_queue() else { return 0 }
    return cnm_queue_dropped(queue)
  }
}
