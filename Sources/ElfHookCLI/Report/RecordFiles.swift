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
  /// Lines of a JSON Lines file that are not records are skipped, and `skipped` hears of them
  /// (once per file): a last line cut short by a writer that was killed or ran out of disk, or a
  /// program's own lines in a stream captured with `--format jsonl 2>FILE`.
  ///
  /// - Throws: `RecordFileError`: the first file that cannot be read, or, for a file with no
  ///   record at all, its first line that is not one (naming the file and the line).
  ///
  /// A record ring also says how many records its process dropped (the ring was full): `dropped`
  /// hears of each ring that did.
  static func load(
    paths: [String], skipped: (SkippedLines) -> Void = { _ in }, dropped: (RingDrops) -> Void = { _ in }
  ) throws -> [Transaction] {
    var transactions: [Transaction] = []
    try forEach(paths: paths, skipped: skipped, dropped: dropped) { transactions.append($0) }
    return transactions
  }

  /// The same as ``load(paths:skipped:dropped:)``, streaming: `body` gets each record as it is
  /// read, and no file is held in memory whole (`elfhook report --format jsonl` on a large file).
  static func forEach(
    paths: [String], skipped: (SkippedLines) -> Void = { _ in }, dropped: (RingDrops) -> Void = { _ in },
    _ body: (Transaction) -> Void
  ) throws {
    for path in paths {
      if isRecordRing(path) {
        try readRing(path, dropped: dropped, body)
        continue
      }
      var count = 0
      var lines = SkippedLines(path: path)
      try readJSONLines(path, skipping: &lines) { transaction in
        count += 1
        body(transaction)
      }
      guard let first = lines.first else { continue }
      if count == 0 { throw first }
      skipped(lines)
    }
  }

  /// The lines of one file that were not records.
  struct SkippedLines: CustomStringConvertible {
    let path: String
    var count = 0
    /// The first of them, with its line number and why.
    var first: RecordFileError?

    var description: String {
      let lines = count == 1 ? "1 line that is not a record" : "\(count) lines that are not records"
      guard case .badRecord(_, let line, let reason) = first else { return "\(path): skipped \(lines)" }
      return "\(path): skipped \(lines) (the first, line \(line): \(reason))"
    }
  }

  /// Whether the file starts with a record ring's magic.
  static func isRecordRing(_ path: String) -> Bool {
    guard let file = fopen(path, "r") else { return false }
    defer { fclose(file) }
    var magic = [UInt8](repeating: 0, count: 8)
    return fread(&magic, 1, 8, file) == 8 && magic == Array("ELFHOOK\u{01}".utf8)
  }

  /// The records one ring's process dropped, and why.
  struct RingDrops {
    let count: UInt64
    /// As the summary puts it: the ring full, or the memory for more of it not had.
    let reason: String
  }

  private static func readRing(_ path: String, dropped: (RingDrops) -> Void, _ body: (Transaction) -> Void) throws {
    let ring: RecordRing
    do {
      ring = try RecordRing(path: path)
    } catch {
      throw RecordFileError.unreadable(path: path, reason: error.reason)
    }
    ring.forEachPublishedRecord(body)
    guard ring.droppedRecords > 0 else { return }
    let reason =
      ring.reservationError.map { "\(ring.process) \(ring.pid) could not reserve more of \(path): \(String(cString: strerror($0)))" }
      ?? "\(path) was full: its process recorded faster than it was read"
    dropped(RingDrops(count: ring.droppedRecords, reason: reason))
  }

  /// Calls `body` with each record of a JSON Lines file, streaming: a file of millions of records
  /// is never held as one string. Blank lines are skipped; lines that are not records are counted
  /// in `skipped`.
  ///
  /// The corresponding C function is `getline`.
  private static func readJSONLines(_ path: String, skipping skipped: inout SkippedLines, _ body: (Transaction) -> Void)
    throws
  {
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
        skipped.count += 1
        if skipped.first == nil { skipped.first = .badRecord(path: path, line: lineNumber, reason: error) }
      }
    }
  }
}
