/// An http record read in place in a ring's slot: the numbers a summary counts, with no text
/// decoded and nothing allocated or retained. A busy server's records mostly repeat the last
/// request, and making an ``HTTPRecord`` of each (strings, optionals, retains and releases) only to
/// add its numbers to the same rows was most of what draining a ring cost. Whether the request is
/// the same is told by its bytes: ``HTTPRequestBytes``.
///
/// Valid only while the slot is (the drain's call, ``RecordSlot``). Every value is the one the
/// decoded ``HTTPRecord`` has, computed the same way.
public struct HTTPRecordView {
  let record: UnsafePointer<RawRecord>

  init(_ record: UnsafePointer<RawRecord>) {
    self.record = record
  }

  /// ``HTTPRecord/startUnixNs``.
  public var startUnixNs: UInt64 { record.pointee.startUnixNanoseconds }
  /// ``HTTPRecord/durationMs``.
  public var durationMs: Double { record.durationMilliseconds }
  /// ``HTTPRecord/status``: `nil` when no response arrived.
  public var status: Int? { record.pointee.httpStatus == 0 ? nil : Int(record.pointee.httpStatus) }
  /// ``HTTPRecord/requestBytes``.
  public var requestBytes: UInt64 { record.pointee.httpRequestBytes }
  /// ``HTTPRecord/responseBytes``.
  public var responseBytes: UInt64 { record.pointee.httpResponseBytes }
}
