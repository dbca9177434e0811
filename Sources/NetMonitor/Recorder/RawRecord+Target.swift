import CHTTP2

/// An http record's request target as its readers see it. The hooks keep an HTTP/2 `:path` sent as
/// a Huffman string as its code (decoding it cost them more than the rest of the request's header
/// block; see `ch2_fields`): it is decoded here, by whoever reads the record, into memory of the
/// reader's stack.
extension UnsafePointer where Pointee == RawRecord {
  /// Whether the request's target in the slot is a Huffman code.
  var targetIsHuffmanCode: Bool {
    pointee.httpProtocol == RawRecord.HTTPVersion.h2 && pointee.targetIsHuffmanCode
  }

  /// Calls `body` with the request's method and target, one after the other in memory (the slot's
  /// own bytes, or the method copied and the target decoded after it), and its `Host` value. A
  /// target decoded beyond ``HTTPHead/targetCapacity`` is cut there, as a long HTTP/1 target is;
  /// a code that is not valid Huffman decodes to nothing.
  func withRequestText<Result>(
    _ body: (_ method: UnsafeRawBufferPointer, _ target: UnsafeRawBufferPointer, _ host: UnsafeRawBufferPointer)
      -> Result
  ) -> Result {
    let request = pointer(to: \.httpRequest)!
    guard targetIsHuffmanCode else { return body(request.methodBytes, request.targetBytes, request.hostBytes) }
    let method = request.methodBytes
    return withUnsafeTemporaryAllocation(byteCount: HTTPHead.methodCapacity + HTTPHead.targetCapacity, alignment: 8) {
      scratch in
      scratch.copyMemory(from: method)
      let code = request.targetBytes
      let text = scratch.baseAddress! + method.count
      var length = ch2_huffman_decode_text(
        code.baseAddress?.assumingMemoryBound(to: UInt8.self), code.count, text.assumingMemoryBound(to: UInt8.self),
        HTTPHead.targetCapacity)
      length = length < 0 ? 0 : Swift.min(length, HTTPHead.targetCapacity)  // SIZE_MAX: not valid
      return body(
        UnsafeRawBufferPointer(start: scratch.baseAddress, count: method.count),
        UnsafeRawBufferPointer(start: text, count: length), request.hostBytes)
    }
  }
}
