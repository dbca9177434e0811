import NetMonitor

#if canImport(Glibc)
  import Glibc
#endif

/// Reads record files as they grow: each `poll` hands over the records that arrived since the
/// last one, each record exactly once. The first poll reads what the files already hold.
///
/// - JSON Lines (`elfhook run --output`): read from the byte offset where the last poll stopped,
///   up to the last complete line (a line still being written waits for the next poll). A file
///   that shrank was truncated or replaced: it is read again from its start. A line that is not a
///   record is reported (file and line) and skipped. A file replaced under its name (renamed over,
///   rotated) is read to its end, then the new file from its start.
/// - Record rings (`ELFHOOK_OUTPUT`): drained with `RecordRing.drain`, so the poller becomes the
///   ring's consumer and its producer's slots are freed. A ring that another consumer (a running
///   `elfhook run`) drains at the same time shares its records with it.
final class RecordFilePoller {
  private enum Source {
    case ring(RecordRing)
    case jsonLines(JSONLinesTail)
  }

  private var sources: [Source] = []

  /// Opens every file.
  ///
  /// - Throws: `RecordFileError.unreadable` for the first file that cannot be opened.
  init(paths: [String]) throws(RecordFileError) {
    for path in paths {
      do {
        sources.append(.ring(try RecordRing(path: path)))
      } catch .notARing {
        sources.append(.jsonLines(try JSONLinesTail(path: path)))
      } catch {
        throw .unreadable(path: path, reason: String(cString: strerror(Self.errnoValue(error))))
      }
    }
  }

  /// Hands every record that arrived since the last poll to `body`, file after file; returns
  /// what went wrong on the way (a line that is not a record, a read error), one message each.
  @discardableResult
  func poll(_ body: (Transaction) -> Void) -> [RecordFileError] {
    var problems: [RecordFileError] = []
    for source in sources {
      switch source {
      case .ring(let ring): ring.drain(body)
      case .jsonLines(let tail): problems += tail.readNewLines(body)
      }
    }
    return problems
  }

  private static func errnoValue(_ error: RecordRing.OpenError) -> Int32 {
    if case .cannotOpen(_, let value) = error { return value }
    return EINVAL
  }
}

/// One JSON Lines file read incrementally from a remembered byte offset.
final class JSONLinesTail {
  let path: String
  private var descriptor: Int32
  /// Where the first byte not yet part of a complete line is.
  private var offset: Int = 0
  /// Complete lines seen so far (for messages).
  private var lineNumber = 0

  init(path: String) throws(RecordFileError) {
    self.path = path
    descriptor = open(path, O_RDONLY | O_CLOEXEC)
    guard descriptor >= 0 else { throw .unreadable(path: path, reason: String(cString: strerror(errno))) }
  }

  deinit { Glibc.close(descriptor) }

  /// Decodes every complete line after `offset` and moves past it; when another file now has the
  /// path, finishes the old one and starts on the new one.
  ///
  /// The corresponding C functions are `stat`, `fstat`, `pread` and `open`.
  func readNewLines(_ body: (Transaction) -> Void) -> [RecordFileError] {
    var problems = readOpenFile(body)
    var named = stat()
    var open = stat()
    if stat(path, &named) == 0, fstat(descriptor, &open) == 0,
      named.st_ino != open.st_ino || named.st_dev != open.st_dev
    {
      let replacement = Glibc.open(path, O_RDONLY | O_CLOEXEC)
      if replacement >= 0 {
        Glibc.close(descriptor)
        descriptor = replacement
        offset = 0
        lineNumber = 0
        problems += readOpenFile(body)
      }
    }
    return problems
  }

  private func readOpenFile(_ body: (Transaction) -> Void) -> [RecordFileError] {
    var status = stat()
    guard fstat(descriptor, &status) == 0 else {
      return [.unreadable(path: path, reason: String(cString: strerror(errno)))]
    }
    if Int(status.st_size) < offset {
      offset = 0
      lineNumber = 0
    }
    let length = Int(status.st_size) - offset
    guard length > 0 else { return [] }
    var bytes = [UInt8](repeating: 0, count: length)
    var filled = 0
    while filled < length {
      let count = bytes.withUnsafeMutableBytes { buffer in
        pread(descriptor, buffer.baseAddress! + filled, length - filled, off_t(offset + filled))
      }
      if count < 0 && errno == EINTR { continue }
      if count < 0 { return [.unreadable(path: path, reason: String(cString: strerror(errno)))] }
      if count == 0 { break }
      filled += count
    }
    guard let lastNewline = bytes[..<filled].lastIndex(of: 0x0A) else { return [] }
    var problems: [RecordFileError] = []
    var start = 0
    bytes.withUnsafeBytes { buffer in
      while start <= lastNewline {
        let end = buffer[start...lastNewline].firstIndex(of: 0x0A)!
        lineNumber += 1
        let line = UnsafeRawBufferPointer(rebasing: buffer[start..<end])
        start = end + 1
        if line.allSatisfy({ $0 == 0x20 || $0 == 0x09 || $0 == 0x0D }) { continue }
        do throws(RecordDecodingError) {
          body(try Transaction(jsonLine: line))
        } catch {
          problems.append(.badRecord(path: path, line: lineNumber, reason: error))
        }
      }
    }
    offset += lastNewline + 1
    return problems
  }
}
