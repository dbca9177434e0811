import NetMonitor

#if canImport(Glibc)
  import Glibc
#endif

/// Reading the record files `elfhook run --output` (JSON Lines) and `ELFHOOK_OUTPUT` (record rings)
/// write.
enum RecordFiles {
  /// Every record of `paths`, file after file, each in the order of its file. A record ring is
  /// read where it lies: its records are left in it for its consumer.
  ///
  /// - Throws: `RecordFileError`: the first file that cannot be read, or the first line that is
  ///   not a record (naming the file and the line).
  static func load(paths: [String]) throws -> [Transaction] {
    var transactions: [Transaction] = []
    for path in paths {
      if isRecordRing(path) {
        try readRing(path) { transactions.append($0) }
      } else {
        try readJSONLines(path) { transactions.append($0) }
      }
    }
    return transactions
  }

  /// Whether the file starts with a record ring's magic.
  static func isRecordRing(_ path: String) -> Bool {
    guard let file = fopen(path, "r") else { return false }
    defer { fclose(file) }
    var magic = [UInt8](repeating: 0, count: 8)
    return fread(&magic, 1, 8, file) == 8 && magic == Array("ELFHOOK\u{01}".utf8)
  }

  private static func readRing(_ path: String, _ body: (Transaction) -> Void) throws {
    do {
      try RecordRing(path: path).forEachPublishedRecord(body)
    } catch {
      throw RecordFileError.unreadable(path: path, reason: error.description)
    }
  }

  /// Calls `body` with each record of a JSON Lines file, streaming: a file of millions of records
  /// is never held as one string. Blank lines are skipped.
  ///
  /// The corresponding C function is `getline`.
  private static func readJSONLines(_ path: String, _ body: (Transaction) -> Void) throws {
    guard let file = fopen(path, "r") else {
      throw RecordFileError.unreadable(path: path, reason: String(cString: strerror(errno)))
    }
    defer { fclose(file) }
    var buffer: UnsafeMutablePointer<CChar>?
    var capacity = 0
    defer { free(buffer) }
    var lineNumber = 0
    while true {
      let length = getline(&buffer, &capacity, file)
      guard length >= 0, let bytes = buffer else {
        if ferror(file) != 0 { throw RecordFileError.unreadable(path: path, reason: String(cString: strerror(errno))) }
        return
      }
      lineNumber += 1
      let line = UnsafeRawBufferPointer(start: bytes, count: length)
      if line.allSatisfy({ $0 == 0x20 || $0 == 0x09 || $0 == 0x0A || $0 == 0x0D }) { continue }
      do {
        body(try Transaction(jsonLine: line))
      } catch {
        throw RecordFileError.badRecord(path: path, line: lineNumber, reason: error)
      }
    }
  }
}
