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
  var methodBytes: UnsafeRawBufferPointer { bytes(0, textLengths.method) }
  var targetBytes: UnsafeRawBufferPointer { bytes(textLengths.method, textLengths.target) }
  var hostBytes: UnsafeRawBufferPointer {
    let lengths = textLengths
    return bytes(lengths.method &+ lengths.target, lengths.host)
  }

  /// The method's, target's and `Host`'s bytes together: what they are packed in.
  var textBytes: UnsafeRawBufferPointer { bytes(0, textLength) }

  /// The bytes of ``HTTPHead/text`` in use.
  @inline(__always)
  var textLength: Int {
    let lengths = textLengths
    return lengths.method &+ lengths.target &+ lengths.host
  }

  /// The method's, target's and `Host`'s lengths, each at most its capacity.
  @inline(__always)
  var textLengths: (method: Int, target: Int, host: Int) {
    (
      Swift.min(Int(pointee.methodLength), HTTPHead.methodCapacity),
      Swift.min(Int(pointee.targetLength), HTTPHead.targetCapacity),
      Swift.min(Int(pointee.hostLength), HTTPHead.hostCapacity)
    )
  }

  @inline(__always)
  private func bytes(_ start: Int, _ count: Int) -> UnsafeRawBufferPointer {
    UnsafeRawBufferPointer(start: UnsafeRawPointer(pointer(to: \.text)!) + start, count: count)
  }
}
