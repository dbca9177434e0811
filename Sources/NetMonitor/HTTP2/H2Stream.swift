import CHTTP2
import CNetMonitor

/// One HTTP/2 stream's slot: its request half, written by the thread that reads the request
/// direction, its response half, written by the thread that reads the response direction, and the
/// one word both write, ``state``: whichever half ends second records the stream (as
/// ``HTTPExchanges`` does for HTTP/1.x). A pushed stream's request half is its PUSH_PROMISE's,
/// written by the response direction.
struct H2Stream {
  /// The stream's tag (``H2Connection`` generation and stream id, see `tag(_:)`) and which halves
  /// ended: ``requestEnded``, ``responseEnded``, ``reset``. Changed only atomically.
  var state: UInt64
  static let requestEnded: UInt64 = 1
  static let responseEnded: UInt64 = 2
  /// The stream was reset (RST_STREAM), refused by a GOAWAY, or still open at the close.
  static let reset: UInt64 = 4

  // The request half.
  /// The tag of the stream the request half's fields are of.
  var requestTag: UInt64
  /// Monotonic; when its request's HEADERS (or PUSH_PROMISE) was read.
  var start: UInt64
  /// Frame bytes of the stream in the request direction, 9-byte headers included.
  var requestBytes: UInt64
  /// Streams opened on the connection before this one.
  var ordinal: UInt32
  /// The request's header block was decoded into ``head`` (method, path as the target,
  /// :authority as the host).
  var hasHead: Bool
  var head: HTTPHead

  // The response half.
  var responseTag: UInt64
  /// Monotonic; when the first response HEADERS frame was read (0: none yet).
  var firstByte: UInt64
  var responseBytes: UInt64
  /// The final :status (a 1xx is kept only until a final one comes); 0: none.
  var status: UInt16
  /// grpc-status of the response's headers (trailers-only) or trailers; -1: none.
  var grpcStatus: Int16
  /// The response ended with END_STREAM.
  var responseComplete: Bool
  var grpcMessage: FixedText<128>
}

extension UnsafeMutablePointer where Pointee == H2Stream {
  /// The request half is stream `tag`'s: made fresh if it was another's. Returns false when the
  /// stream was recorded already (a frame after its end).
  @inline(__always)
  func claimRequestHalf(_ tag: UInt64) -> Bool {
    if pointee.requestTag == tag { return !isRecorded(tag) }
    if isRecorded(tag) { return false }
    pointee.requestTag = tag
    pointee.start = 0
    pointee.requestBytes = 0
    pointee.ordinal = 0
    pointee.hasHead = false
    return true
  }

  /// The response half is stream `tag`'s: made fresh if it was another's. Returns false when the
  /// stream was recorded already.
  @inline(__always)
  func claimResponseHalf(_ tag: UInt64) -> Bool {
    if pointee.responseTag == tag { return !isRecorded(tag) }
    if isRecorded(tag) { return false }
    pointee.responseTag = tag
    pointee.firstByte = 0
    pointee.responseBytes = 0
    pointee.status = 0
    pointee.grpcStatus = -1
    pointee.responseComplete = false
    pointee.grpcMessage.removeAll()
    return true
  }

  /// Both halves of stream `tag` ended: it was recorded.
  @inline(__always)
  func isRecorded(_ tag: UInt64) -> Bool {
    let state = cnm_load_u64(pointer(to: \.state)!)
    return state & ~7 == tag && state & 3 == 3
  }

  /// Ends `halves` (``H2Stream/requestEnded``, ``H2Stream/responseEnded``, with ``H2Stream/reset``
  /// to end both at once) of stream `tag`. True when this call ended the last half that was open:
  /// the caller records the stream. A slot still tagged with an older stream is taken over.
  @inline(__always)
  func end(_ halves: UInt64, of tag: UInt64) -> Bool {
    let state = pointer(to: \.state)!
    var current = cnm_load_u64(state)
    while true {
      let base = current & ~7 == tag ? current : tag
      if base & 3 == 3 { return false }
      let next = base | halves
      if cnm_exchange_u64(state, &current, next) { return next & 3 == 3 }
    }
  }
}
