import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// Writes each transaction as one line of JSON (`Transaction.jsonLine()` plus `\n`) to a file or
/// a file descriptor: the record stream of `ARCHITECTURE.md`.
///
/// **Crash safety.** Nothing is buffered in the process: each record is handed to the kernel with
/// one `write(2)` before `record(_:)` returns, so a process killed with `SIGKILL` loses no record
/// that was recorded. (Surviving a power loss would need `fsync`, which this sink does not do.)
///
/// **Whole lines.** Files are opened with `O_APPEND`, and the writes of one sink are serialized,
/// so lines from different threads never interleave. Short writes and `EINTR` are continued
/// until the line is complete. If a line is cut short by an error, the next record starts on a
/// fresh line, so a reader loses only the damaged line.
///
/// **Never fails the host.** `record(_:)` does not throw or trap: failures are counted
/// (`writeFailures`, `lastWriteError`) and the record is dropped. Writing to a pipe or socket
/// whose reader has gone returns `EPIPE` instead of raising `SIGPIPE` in the host.
public final class JSONLinesSink: TransactionSink {
  private struct State {
    var fd: Int32
    /// A previous write stopped in the middle of a line.
    var lineIsOpen = false
    var lastError: SinkError?
  }

  private let state: Mutex<State>
  private let path: String?
  private let ownsDescriptor: Bool
  private let blocksSIGPIPE: Bool
  private let system: SinkSystemCalls
  private let failures = Atomic<Int>(0)
  private let written = Atomic<Int>(0)

  /// Opens (creating it with mode `0600` if needed) the file at `path` for appending.
  ///
  /// The file is opened with `O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW`: records
  /// are appended even when several processes share the file, the descriptor does not leak
  /// into programs the host executes, and a symbolic link at `path` is refused (`ELOOP`), so a
  /// planted link cannot redirect the records of a privileged process.
  ///
  /// The corresponding C function is `open`.
  ///
  /// - Parameter path: The record file.
  /// - Throws: `SinkError` naming `open`, the path and `errno`.
  public convenience init(path: String) throws(SinkError) {
    var result: (fd: Int32, errno: Int32)
    repeat {
      result = system_open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
    } while result.fd < 0 && result.errno == EINTR
    guard result.fd >= 0 else { throw SinkError(call: "open", path: path, errno: result.errno) }
    self.init(fileDescriptor: result.fd, path: path, ownsDescriptor: true, system: .live)
  }

  /// Writes to a descriptor the caller opened (`STDERR_FILENO` for a live view).
  ///
  /// - Parameters:
  ///   - fileDescriptor: An open, writable descriptor.
  ///   - closeWhenDone: Whether `close()` (and deinitialization) closes `fileDescriptor`.
  ///     `false` by default: standard error stays the host's.
  public convenience init(fileDescriptor: Int32, closeWhenDone: Bool = false) {
    self.init(
      fileDescriptor: fileDescriptor, path: nil, ownsDescriptor: closeWhenDone, system: .live)
  }

  /// The designated initializer; tests pass replacement system calls.
  init(fileDescriptor: Int32, path: String?, ownsDescriptor: Bool, system: SinkSystemCalls) {
    state = Mutex(State(fd: fileDescriptor))
    self.path = path
    self.ownsDescriptor = ownsDescriptor
    self.system = system
    let type = system_fileType(fileDescriptor)
    blocksSIGPIPE = type == S_IFIFO || type == S_IFSOCK
  }

  deinit {
    if ownsDescriptor {
      let fd = state.withLock { $0.fd }
      if fd >= 0 { _ = system.close(fd) }
    }
  }

  /// Writes `transaction` as one line. On failure the record is dropped and counted.
  ///
  /// The corresponding C function is `write`.
  public func record(_ transaction: Transaction) {
    let line = transaction.jsonBytes(appendingNewline: true)
    let outcome: SinkError? = state.withLock { state in
      let error: SinkError?
      if state.fd < 0 {
        error = SinkError(call: "write", path: path, errno: EBADF)  // closed
      } else if blocksSIGPIPE {
        error = system_withSIGPIPEBlocked { writeLine(line, to: &state) }
      } else {
        error = writeLine(line, to: &state)
      }
      if let error { state.lastError = error }
      return error
    }
    if outcome == nil {
      written.add(1, ordering: .relaxed)
    } else {
      failures.add(1, ordering: .relaxed)
    }
  }

  /// Writes `line` completely (continuing after short writes and `EINTR`), first closing a line
  /// that an earlier failure left open.
  private func writeLine(_ line: [UInt8], to state: inout State) -> SinkError? {
    if state.lineIsOpen {
      let newline: [UInt8] = [UInt8(ascii: "\n")]
      if let error = writeAll(newline, fd: state.fd) { return error.error }
      state.lineIsOpen = false
    }
    guard let failure = writeAll(line, fd: state.fd) else { return nil }
    state.lineIsOpen = failure.written > 0
    return failure.error
  }

  /// `nil` when every byte was written; otherwise the error and how many bytes made it.
  private func writeAll(_ bytes: [UInt8], fd: Int32) -> (error: SinkError, written: Int)? {
    bytes.withUnsafeBytes { buffer in
      var offset = 0
      while offset < buffer.count {
        let (count, code) = system.write(fd, UnsafeRawBufferPointer(rebasing: buffer[offset...]))
        if count < 0 {
          if code == EINTR { continue }
          return (SinkError(call: "write", path: path, errno: code), offset)
        }
        if count == 0 {
          // write(2) returns 0 only for a zero-length request; treat it as an I/O error rather
          // than spinning.
          return (SinkError(call: "write", path: path, errno: EIO), offset)
        }
        offset += count
      }
      return nil
    }
  }

  /// Records that could not be written (and were dropped).
  public var writeFailures: Int { failures.load(ordering: .relaxed) }

  /// Records written completely.
  public var recordsWritten: Int { written.load(ordering: .relaxed) }

  /// The most recent write failure, or `nil` when every write succeeded.
  public var lastWriteError: SinkError? { state.withLock { $0.lastError } }

  /// Stops writing. An owned descriptor (`init(path:)`, or `closeWhenDone`) is closed; later
  /// records are counted as failures (`EBADF`). Safe to call more than once and concurrently
  /// with `record(_:)`.
  ///
  /// The corresponding C function is `close`.
  public func close() {
    let fd = state.withLock { state in
      defer { state.fd = -1 }
      return state.fd
    }
    if ownsDescriptor && fd >= 0 { _ = system.close(fd) }
  }
}
