/// A record in a ring's slot, as ``RecordRing/drainSlots(skippingUnfinished:_:)`` hands it over:
/// read in place, and valid only during that call (the slot is freed for the producer after it).
///
/// A consumer that keeps a summary looks at an http record's numbers first (``http``) and decodes
/// the record (``withTransaction(_:)``) only when it needs more: most records of a busy server
/// repeat the last request, and counting one from its numbers costs a fraction of making its
/// ``Transaction``.
public struct RecordSlot {
  /// The slot's bytes: a dns, connection or http record (the drain hands over no other).
  var bytes: UnsafeRawPointer
  /// The ring's process name and text cache, for decoding.
  let process: String
  let cache: UnsafeMutablePointer<RecordTextCache>

  init(bytes: UnsafeRawPointer, process: String, cache: UnsafeMutablePointer<RecordTextCache>) {
    self.bytes = bytes
    self.process = process
    self.cache = cache
  }

  /// The record's numbers, when it is an http record.
  public var http: HTTPRecordView? {
    guard bytes.load(as: UInt8.self) == RawRecord.Kind.http else { return nil }
    return HTTPRecordView(UnsafePointer(bytes.bindMemory(to: RawRecord.self, capacity: 1)))
  }

  /// Hands the record, decoded, to `body` (text from the ring's cache when it repeats the last
  /// decoded record's).
  public func withTransaction(_ body: (Transaction) -> Void) {
    _ = RawRecord.withTransaction(at: bytes, process: process, cache: &cache.pointee, body)
  }
}
