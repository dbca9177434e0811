#if canImport(Glibc)
  import Glibc
#endif

/// The libc calls `ElfFile` makes, each behind one thin wrapper that returns the result and the
/// `errno` read right after the call (before anything else can overwrite it), and retries `EINTR`.
enum ElfFileSystem {
  static func open(_ path: String) -> (fd: Int32, errno: Int32) {
    while true {
      let fd = Glibc.open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
      let code = Glibc.errno
      if fd < 0 && code == EINTR { continue }
      return (fd, fd < 0 ? code : 0)
    }
  }

  static func fstat(_ fd: Int32) -> (stat?, errno: Int32) {
    var info = stat()
    if Glibc.fstat(fd, &info) != 0 { return (nil, Glibc.errno) }
    return (info, 0)
  }

  /// Reads up to `count` bytes at `offset`; fewer at the end of the file.
  static func pread(_ fd: Int32, count: Int, offset: Int64) -> ([UInt8]?, errno: Int32) {
    var bytes = [UInt8](repeating: 0, count: count)
    var done = 0
    while done < count {
      let n = bytes.withUnsafeMutableBytes { buffer in
        Glibc.pread(fd, buffer.baseAddress! + done, count - done, off_t(offset) + off_t(done))
      }
      if n < 0 {
        let code = Glibc.errno
        if code == EINTR { continue }
        return (nil, code)
      }
      if n == 0 { break }
      done += n
    }
    bytes.removeSubrange(done...)
    return (bytes, 0)
  }

  static func close(_ fd: Int32) {
    _ = Glibc.close(fd)
  }
}
