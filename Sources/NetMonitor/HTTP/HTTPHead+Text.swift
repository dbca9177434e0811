/// Text views of the captured bytes, for the recorder thread. They allocate; never call them from a hook.
extension HTTPHead {
  /// The method as text (`"GET"`); empty for a response.
  public var methodString: String { string { $0.methodBytes } }

  /// The request target as text, possibly truncated (``targetTruncated``); invalid UTF-8 is replaced
  /// with U+FFFD.
  public var targetString: String { string { $0.targetBytes } }

  /// The `Host` header value as text, or `nil` when the head had none.
  public var hostString: String? {
    hostLength == 0 ? nil : string { $0.hostBytes }
  }

  /// The HTTP version as text: `"1.0"` or `"1.1"`.
  public var versionString: String { "1.\(minorVersion)" }

  /// The bytes `text` picks of this head, decoded.
  private func string(_ text: (UnsafePointer<HTTPHead>) -> UnsafeRawBufferPointer) -> String {
    withUnsafePointer(to: self) { String(decoding: text($0), as: UTF8.self) }
  }
}

/// The captured text of a head in memory (a parser's, or a record ring's slot), in place. Each
/// length is clamped to its text's capacity, so that a slot written by anyone is read within its
/// bounds.
extension UnsafePointer where Pointee == HTTPHead {
  var methodBytes: UnsafeRawBufferPointer { bytes(methodRange) }
  var targetBytes: UnsafeRawBufferPointer { bytes(targetRange) }
  var hostBytes: UnsafeRawBufferPointer { bytes(hostRange) }
  /// The method's, target's and `Host`'s bytes together: what they are packed in.
  var textBytes: UnsafeRawBufferPointer { bytes(0..<textLength) }

  /// The bytes of ``HTTPHead/text`` in use.
  var textLength: Int { hostRange.upperBound }

  private var methodRange: Range<Int> { 0..<Swift.min(Int(pointee.methodLength), HTTPHead.methodCapacity) }

  private var targetRange: Range<Int> {
    let start = methodRange.upperBound
    return start..<start &+ Swift.min(Int(pointee.targetLength), HTTPHead.targetCapacity)
  }

  private var hostRange: Range<Int> {
    let start = targetRange.upperBound
    return start..<start &+ Swift.min(Int(pointee.hostLength), HTTPHead.hostCapacity)
  }

  private func bytes(_ range: Range<Int>) -> UnsafeRawBufferPointer {
    UnsafeRawBufferPointer(start: UnsafeRawPointer(pointer(to: \.text)!) + range.lowerBound, count: range.count)
  }
}
