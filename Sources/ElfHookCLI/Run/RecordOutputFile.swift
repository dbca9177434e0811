import Foundation

/// The `--output` file: created mode 0600, never through a symbolic link, and an existing file is
/// replaced only when it is a regular file of our own (truncated, as `>` does, and made 0600: the
/// records name hosts and paths).
final class RecordOutputFile {
  let path: String
  private let descriptor: Int32

  init(path: String) throws(CommandFailure) {
    let fd = open(path, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0o600)
    guard fd >= 0 else {
      let reason = errno == ELOOP ? "it is a symbolic link; refusing to follow it" : String(cString: strerror(errno))
      throw .input("cannot write \(path): \(reason)")
    }
    var status = stat()
    guard fstat(fd, &status) == 0, (status.st_mode & S_IFMT) == S_IFREG else {
      close(fd)
      throw .input("cannot write \(path): not a regular file")
    }
    guard status.st_uid == geteuid() else {
      close(fd)
      throw .input("refusing to overwrite \(path): it belongs to user \(status.st_uid)")
    }
    ftruncate(fd, 0)
    fchmod(fd, 0o600)
    self.path = path
    descriptor = fd
  }

  deinit { close(descriptor) }

  /// Appends `bytes` (whole lines): what is written is on disk even if `elfhook` is killed later.
  func append(_ bytes: [UInt8]) throws(CommandFailure) {
    let written = bytes.withUnsafeBytes { writeAll(descriptor, $0) }
    if !written { throw .input("cannot write \(path): \(String(cString: strerror(errno)))") }
  }
}
