import NetMonitor

#if canImport(Glibc)
  import Glibc
#endif

/// A record ring file (`ELFHOOK_OUTPUT`), exported as its consumer: the ring's read position is
/// the cursor. Records are peeked (``RecordRing/peekPublished(limit:)``), and their slots released
/// (``RecordRing/release(_:)``) only after the collector acknowledged them and the state file
/// holds the read position past them.
///
/// Should the exporter die between writing the state file and releasing the slots, the saved
/// cursor is ahead of the ring's read position at the next start: the slots in between were
/// acknowledged, and are released then, not sent again. A ring re-created under the same name
/// (another inode or creation time) starts from its own read position.
///
/// A slot that a producer killed mid-write left unpublished stops the export of that ring (as it
/// stops `RecordRing.drain`): the ring's other records cannot be taken past it in order.
final class RingSource: RecordSource {
  let path: String
  private(set) var cursor: SourceCursor
  private let ring: RecordRing

  /// Maps the ring at `path`, resuming from `saved` when it is this ring's cursor.
  ///
  /// - Throws: `RecordFileError.unreadable` when the ring cannot be mapped.
  init(path: String, saved: SourceCursor?) throws {
    self.path = path
    do {
      ring = try RecordRing(path: path)
    } catch {
      throw RecordFileError.unreadable(path: path, reason: error.description)
    }
    var status = stat()
    guard stat(path, &status) == 0 else {
      throw RecordFileError.unreadable(path: path, reason: String(cString: strerror(errno)))
    }
    cursor = SourceCursor(
      device: UInt64(status.st_dev), inode: UInt64(status.st_ino), offset: ring.readPosition,
      ringCreatedUnixNs: ring.createdUnixNs)
    if let saved, saved.isSameFile(as: cursor), saved.offset > ring.readPosition {
      let pending = saved.offset - ring.readPosition
      ring.release(Int(clamping: pending))
      cursor.offset = ring.readPosition
    }
  }

  func nextBatch(maxSpans: Int, atEnd: Bool) throws -> SourceBatch? {
    let first = ring.readPosition
    var records: [SourcedRecord] = []
    var spans = 0
    var used = 0
    // Slots are decoded as the batch takes them, up to 4 × maxSpans of them (records without a
    // span count too): none is decoded to be left for the next batch but the one that did not fit.
    ring.peekPublished { slot in
      if let transaction = slot {
        let record = SourcedRecord(transaction: transaction, position: first &+ UInt64(used))
        if spans + record.spanCount > maxSpans && !records.isEmpty { return false }
        spans += record.spanCount
        records.append(record)
      }
      used += 1
      return used < 4 * maxSpans
    }
    guard used > 0 else { return nil }
    var after = cursor
    after.offset = first &+ UInt64(used)
    return SourceBatch(records: records, cursorAfter: after, slotCount: used)
  }

  func acknowledge(_ batch: SourceBatch) { cursor = batch.cursorAfter }

  func didPersist(_ batch: SourceBatch) { ring.release(batch.slotCount) }

  /// Whether the process that created the ring still runs (``RingProducer``).
  var producerIsRunning: Bool { RingProducer.isRunning(pid: ring.pid, ringCreatedUnixNs: ring.createdUnixNs) }

  /// Once the producer is gone: passes over a slot it reserved and never published (it was
  /// killed mid-record), so the records after it can be read. Returns whether one was.
  func skipUnfinished() -> Bool {
    guard ring.skipUnfinished() else { return false }
    cursor.offset = ring.readPosition
    return true
  }
}
