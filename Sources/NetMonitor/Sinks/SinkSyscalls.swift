#if canImport(Glibc)
  import Glibc
#endif

// The libc calls the sinks make, each behind one thin wrapper that returns the result together
// with the `errno` read right after the call (as swift-system's `system_<name>` functions do).
// They retry nothing: retry policy (EINTR, short writes) lives in the caller, where it is tested.

/// The corresponding C function is `open`.
func system_open(_ path: String, _ flags: Int32, _ mode: mode_t) -> (fd: Int32, errno: Int32) {
  let fd = open(path, flags, mode)
  return (fd, fd < 0 ? Glibc.errno : 0)
}

/// The corresponding C function is `write`.
func system_write(_ fd: Int32, _ buffer: UnsafeRawBufferPointer) -> (count: Int, errno: Int32) {
  let count = write(fd, buffer.baseAddress, buffer.count)
  return (count, count < 0 ? Glibc.errno : 0)
}

/// The corresponding C function is `close`. Returns `errno`, or 0.
func system_close(_ fd: Int32) -> Int32 {
  close(fd) == 0 ? 0 : Glibc.errno
}

/// The file type bits (`S_IFMT`) of `fd`, or `nil` when `fstat` fails.
/// The corresponding C function is `fstat`.
func system_fileType(_ fd: Int32) -> mode_t? {
  var info = stat()
  guard fstat(fd, &info) == 0 else { return nil }
  return info.st_mode & S_IFMT
}

/// Runs `body` with `SIGPIPE` blocked on this thread, then discards a `SIGPIPE` that `body`
/// raised (and only that one), so writing to a pipe or socket whose reader is gone fails with
/// `EPIPE` instead of killing the host process.
///
/// The corresponding C functions are `pthread_sigmask`, `sigpending` and `sigtimedwait`.
func system_withSIGPIPEBlocked<T>(_ body: () -> T) -> T {
  var pipeSet = sigset_t()
  sigemptyset(&pipeSet)
  sigaddset(&pipeSet, SIGPIPE)
  var previous = sigset_t()
  guard pthread_sigmask(SIG_BLOCK, &pipeSet, &previous) == 0 else { return body() }
  var pending = sigset_t()
  sigemptyset(&pending)
  sigpending(&pending)
  let alreadyPending = sigismember(&pending, SIGPIPE) == 1
  let result = body()
  if !alreadyPending {
    sigemptyset(&pending)
    sigpending(&pending)
    if sigismember(&pending, SIGPIPE) == 1 {
      var zero = timespec(tv_sec: 0, tv_nsec: 0)
      while sigtimedwait(&pipeSet, nil, &zero) < 0 && Glibc.errno == EINTR {}
    }
  }
  pthread_sigmask(SIG_SETMASK, &previous, nil)
  return result
}

/// The system calls `JSONLinesSink` makes, as values, so tests can replace them (force `EINTR`,
/// short writes, `ENOSPC`) without touching the real file descriptor table.
struct SinkSystemCalls: Sendable {
  var write: @Sendable (Int32, UnsafeRawBufferPointer) -> (count: Int, errno: Int32)
  var close: @Sendable (Int32) -> Int32

  static let live = SinkSystemCalls(write: system_write, close: system_close)
}
