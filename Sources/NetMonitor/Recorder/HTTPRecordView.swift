/// An http record read in place in a ring's slot: the numbers a summary counts, with no text
/// decoded and nothing allocated or retained. A busy server's records mostly repeat the last
/// request, and making an ``HTTPRecord`` of each (strings, optionals, retains and releases) only to
/// add its numbers to the same rows was most of what draining a ring cost. Whether the request is
/// the same is told by its bytes: ``HTTPRequestBytes``.
///
/// Each number is the one the decoded ``HTTPRecord`` has, computed the same way. They are read
/// from the slot when the view is made: its consumer is in another module, where a call per
/// number cost more than reading them all. The view is valid only while the slot is (the drain's
/// call, ``RecordSlot``).
public struct HTTPRecordView {
  let record: UnsafePointer<RawRecord>
  /// ``HTTPRecord/startUnixNs``.
  public let startUnixNs: UInt64
  /// ``HTTPRecord/durationMs``.
  public let durationMs: Double
  /// ``HTTPRecord/status``: `nil` when no response arrived.
  public let status: Int?
  /// ``HTTPRecord/requestBytes``.
  public let requestBytes: UInt64
  /// ``HTTPRecord/responseBytes``.
  public let responseBytes: UInt64
  /// ``HTTPRecord/responseComplete``.
  public let responseComplete: Bool?
  /// ``HTTPRecord/grpcStatus``.
  public let grpcStatus: Int?

  init(_ record: UnsafePointer<RawRecord>) {
    self.record = record
    startUnixNs = record.pointee.startUnixNanoseconds
    durationMs = record.durationMilliseconds
    status = record.pointee.httpStatus == 0 ? nil : Int(record.pointee.httpStatus)
    requestBytes = record.pointee.httpRequestBytes
    responseBytes = record.pointee.httpResponseBytes
    responseComplete = record.pointee.httpResponseComplete
    grpcStatus =
      record.pointee.httpProtocol == RawRecord.HTTPVersion.h2 && record.pointee.grpcStatus >= 0
      ? Int(record.pointee.grpcStatus) : nil
  }
}

extension HTTPRecordView {
  /// Whether the exchange went over TLS (its scheme is `https`).
  public var isTLS: Bool { record.pointee.core.isTLS != 0 }

  /// Calls `body` with the request's method, target and `Host` value: the bytes
  /// ``HTTPRecord/method``, ``HTTPRecord/target`` (before redaction) and ``HTTPRecord/host`` are
  /// made from, the method and the target one after the other in memory. They are the slot's own,
  /// but for an HTTP/2 `:path` kept as its Huffman code: decoded on the stack for the call. Valid
  /// only during the call.
  ///
  /// Not generic: called from another module, a generic function runs unspecialized, and this
  /// one then looked up its result type's metadata at every call (~330 instructions a record, a
  /// sixth of what draining one cost). What the caller needs from the bytes it keeps itself.
  public func withRequestText(
    _ body: (_ method: UnsafeRawBufferPointer, _ target: UnsafeRawBufferPointer, _ host: UnsafeRawBufferPointer)
      -> Void
  ) {
    record.withRequestText(body)
  }
}
