import Foundation
import NetMonitor

#if canImport(Glibc)
  import Glibc
#endif

/// A JSON Lines record file (`elfhook run --output`), read from its cursor on, as it grows.
///
/// The cursor is the byte offset after the last acknowledged line, with the file's device and
/// inode. A cursor for another file (the name now names a new file) or beyond the file's end (the
/// file was truncated) is dropped, with one line on stderr, and the file is exported from its
/// start: its records are new ones. The same holds when the file shrinks while it is followed;
/// and when, followed, the name comes to name another file (a rotation), the old file is read to
/// its end first, then the new one from its start.
///
/// A line that is not a record is reported once (`FILE:LINE: not a record: …; skipped`) and
/// skipped: one bad line does not stop a follower, and the records around it still go out.
final class JSONLinesSource: RecordSource {
  let path: String
  private(set) var cursor: SourceCursor
  private var descriptor: Int32
  private let log: (String) -> Void
  /// Lines that were not records, reported and skipped so far.
  private(set) var skippedLines = 0
  /// Bad lines before this offset are already reported (a batch not acknowledged is read again).
  private var reportedBefore: UInt64 = 0

  /// At most this many bytes are read per batch; a longer line is still read whole.
  static let readSize = 1 << 20

  /// Opens `path`, resuming from `saved` when it is this file's cursor.
  ///
  /// - Throws: `RecordFileError.unreadable` when the file cannot be opened.
  init(path: String, saved: SourceCursor?, log: @escaping (String) -> Void) throws {
    self.path = path
    self.log = log
    descriptor = open(path, O_RDONLY | O_CLOEXEC)
    guard descriptor >= 0 else {
      throw RecordFileError.unreadable(path: path, reason: String(cString: strerror(errno)))
    }
    var status = stat()
    guard fstat(descriptor, &status) == 0 else {
      let reason = String(cString: strerror(errno))
      close(descriptor)
      throw RecordFileError.unreadable(path: path, reason: reason)
    }
    let fresh = SourceCursor(device: UInt64(status.st_dev), inode: UInt64(status.st_ino), offset: 0)
    cursor = fresh
    if let saved {
      if !saved.isSameFile(as: fresh) {
        log("\(path) is not the file the last export read (another inode); exporting it from the start")
      } else if saved.offset > UInt64(status.st_size) {
        log("\(path) is shorter than where the last export stopped (truncated); exporting it from the start")
      } else {
        cursor = saved
      }
    }
  }

  deinit { close(descriptor) }

  func nextBatch(maxSpans: Int, atEnd: Bool) throws -> SourceBatch? {
    var status = stat()
    if fstat(descriptor, &status) == 0, UInt64(status.st_size) < cursor.offset {
      log("\(path) shrank below the exported offset (truncated); exporting it from the start")
      cursor.offset = 0
      cursor.line = 0
      reportedBefore = 0
    }
    var records: [SourcedRecord] = []
    var spans = 0
    var offset = cursor.offset
    var line = cursor.line
    var size = Self.readSize
    let maxRecords = 4 * maxSpans
    read: while true {
      let bytes = try read(at: offset, count: size)
      guard !bytes.isEmpty else { break }
      var start = 0
      scan: while start < bytes.count {
        let newline = bytes[start...].firstIndex(of: 0x0A)
        guard newline != nil || atEnd else {
          // An incomplete last line: the writer is still writing it — unless it fills the buffer.
          if start == 0 && bytes.count == size {
            size *= 2
            continue read
          }
          break scan
        }
        let end = newline ?? bytes.count
        let lineBytes = bytes[start..<end]
        if !lineBytes.allSatisfy({ $0 == 0x20 || $0 == 0x09 || $0 == 0x0D }) {
          let parsed = lineBytes.withUnsafeBytes { bytes in
            Result { () throws(RecordDecodingError) -> Transaction in try Transaction(jsonLine: bytes) }
          }
          switch parsed {
          case .success(let transaction):
            let record = SourcedRecord(transaction: transaction, position: offset + UInt64(start))
            if spans + record.spanCount > maxSpans && !records.isEmpty { break scan }
            spans += record.spanCount
            records.append(record)
          case .failure(let error):
            reportBadLine(line + 1, at: offset + UInt64(start), error)
          }
        }
        line += 1
        start = newline.map { $0 + 1 } ?? bytes.count
        if records.count >= maxRecords { break scan }
      }
      offset += UInt64(start)
      if start < bytes.count || bytes.count < size || records.count >= maxRecords { break }
    }
    guard offset != cursor.offset else {
      // Read to its end: when the name now names another file, go on with that one at once.
      if !atEnd, reopenIfReplaced() { return try nextBatch(maxSpans: maxSpans, atEnd: atEnd) }
      return nil
    }
    var after = cursor
    after.offset = offset
    after.line = line
    return SourceBatch(records: records, cursorAfter: after)
  }

  func acknowledge(_ batch: SourceBatch) { cursor = batch.cursorAfter }

  /// Once the open file is read to its end: when `path` now names another file, switches to it,
  /// from its start, and returns `true`. The corresponding C functions are `stat` and `open`.
  private func reopenIfReplaced() -> Bool {
    var named = stat()
    guard stat(path, &named) == 0,
      UInt64(named.st_dev) != cursor.device || UInt64(named.st_ino) != cursor.inode
    else { return false }
    let replacement = open(path, O_RDONLY | O_CLOEXEC)
    guard replacement >= 0 else { return false }  // gone again: keep the old one, try at the next poll
    var status = stat()
    guard fstat(replacement, &status) == 0 else {
      close(replacement)
      return false
    }
    close(descriptor)
    descriptor = replacement
    cursor = SourceCursor(device: UInt64(status.st_dev), inode: UInt64(status.st_ino), offset: 0)
    reportedBefore = 0
    log("\(path) was replaced by another file; following the new one from its start")
    return true
  }

  func didPersist(_ batch: SourceBatch) {}

  /// Says, once, that line `number` (at byte `position`) is not a record; it is skipped.
  private func reportBadLine(_ number: Int, at position: UInt64, _ error: RecordDecodingError) {
    guard position >= reportedBefore else { return }
    reportedBefore = position + 1
    skippedLines += 1
    log("\(RecordFileError.badRecord(path: path, line: number, reason: error)); skipped")
  }

  /// Up to `count` bytes from `offset`. The corresponding C function is `pread`.
  private func read(at offset: UInt64, count: Int) throws -> [UInt8] {
    var bytes = [UInt8](repeating: 0, count: count)
    var filled = 0
    while filled < count {
      let result = bytes.withUnsafeMutableBytes { buffer in
        pread(descriptor, buffer.baseAddress! + filled, count - filled, off_t(offset) + off_t(filled))
      }
      if result < 0 {
        if errno == EINTR { continue }
        throw RecordFileError.unreadable(path: path, reason: String(cString: strerror(errno)))
      }
      if result == 0 { break }
      filled += result
    }
    return Array(bytes[..<filled])
  }
}
