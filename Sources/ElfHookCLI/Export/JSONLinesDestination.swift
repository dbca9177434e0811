import NetMonitor

#if canImport(Glibc)
  import Glibc
#endif

/// `elfhook export --jsonl FILE`: records appended to a JSON Lines file, exactly once — for a log
/// shipper that tails it (Vector, Fluent Bit, Promtail), or for `elfhook report`.
///
/// Each batch is appended and `fsync`ed before the export state (its cursors, and this file's
/// size after the batch) is saved. An exporter that died between the two left lines the state
/// does not count: the next start truncates the file back to the saved size, and the batch is
/// written again, once. A file that is no longer the one the state names (another inode:
/// rotated away) or shorter than the saved size is left alone and appended to.
final class JSONLinesDestination {
  let path: String
  private let descriptor: Int32
  /// The file's identity and size after the last batch.
  private(set) var cursor: SourceCursor

  /// Opens (creating it, mode 0600, never through a symbolic link) the file at `path`, and cuts
  /// it back to `saved` when that is this file's size after the last saved batch.
  ///
  /// - Throws: `CommandFailure` naming the call that failed. The corresponding C functions are
  ///   `open`, `fstat` and `ftruncate`.
  init(path: String, saved: SourceCursor?) throws(CommandFailure) {
    self.path = path
    descriptor = open(path, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0o600)
    guard descriptor >= 0 else {
      let reason = errno == ELOOP ? "it is a symbolic link; refusing to follow it" : String(cString: strerror(errno))
      throw .input("cannot write \(path): \(reason)")
    }
    var status = stat()
    guard fstat(descriptor, &status) == 0, (status.st_mode & S_IFMT) == S_IFREG else {
      close(descriptor)
      throw .input("cannot write \(path): not a regular file")
    }
    cursor = SourceCursor(device: UInt64(status.st_dev), inode: UInt64(status.st_ino), offset: UInt64(status.st_size))
    if let saved, saved.isSameFile(as: cursor), saved.offset < cursor.offset {
      guard ftruncate(descriptor, off_t(saved.offset)) == 0 else {
        let reason = String(cString: strerror(errno))
        close(descriptor)
        throw .input("cannot cut \(path) back to the records the last export saved: \(reason)")
      }
      cursor.offset = saved.offset
    }
  }

  deinit { close(descriptor) }

  /// Appends `records` as JSON lines (as `elfhook run --output` writes them) and makes them
  /// durable; ``cursor`` is then the file's new size.
  ///
  /// - Throws: `CommandFailure` naming the call that failed. The corresponding C functions are
  ///   `write` and `fsync`.
  func append(_ records: [SourcedRecord]) throws(CommandFailure) {
    guard !records.isEmpty else { return }
    var lines: [UInt8] = []
    for record in records { record.transaction.appendJSONLine(to: &lines) }
    guard lines.withUnsafeBytes({ writeAll(descriptor, $0) }) else {
      throw .input("cannot write \(path): \(String(cString: strerror(errno)))")
    }
    guard fsync(descriptor) == 0 else { throw .input("cannot write \(path) (fsync): \(String(cString: strerror(errno)))") }
    var status = stat()
    cursor.offset = fstat(descriptor, &status) == 0 ? UInt64(status.st_size) : cursor.offset + UInt64(lines.count)
  }
}
