extension HTTPStreamParser {
  /// Consumes, in a tight loop, the run of bytes at `index` that the current phase takes without any
  /// decision: a header name's token bytes, a request target's bytes, or text nobody records (other
  /// headers' values, reason phrases, chunk extensions, trailers). Stops at the first byte that needs
  /// ``scan(_:)`` (a delimiter, a line end or an invalid byte), or at `count`. The caller accounts the
  /// consumed bytes against ``maxHeadBytes``.
  @inline(__always)
  mutating func scanRun(_ base: UnsafeRawPointer, at index: inout Int, count: Int) {
    switch phase {
    case .headerName:
      while index < count {
        let byte = base.load(fromByteOffset: index, as: UInt8.self)
        guard HTTPByteClass.isToken(byte) else { return }
        appendScratch(HTTPByteClass.lowercased(byte))
        index &+= 1
      }
    case .requestTarget:
      while index < count {
        let byte = base.load(fromByteOffset: index, as: UInt8.self)
        guard HTTPByteClass.isTarget(byte) else { return }
        if Int(head.targetLength) < HTTPHead.targetCapacity {
          head.target[Int(head.targetLength)] = byte
          head.targetLength &+= 1
        } else {
          head.targetTruncated = true
        }
        index &+= 1
      }
    case .headerValue where field == .other, .statusReason, .headerIgnoredLine, .trailerLine,
      .chunkExtension:
      while index < count,
        HTTPByteClass.isFieldText(base.load(fromByteOffset: index, as: UInt8.self))
      {
        index &+= 1
      }
    default:
      return
    }
  }
}
