/// The request of an http record as its slot holds it — scheme, method, `Host` and target bytes,
/// before any decoding or redaction — kept to recognise the next record that repeats it without
/// decoding that one. Equal bytes decode to equal ``HTTPRecord`` fields (`scheme`, `method`,
/// `host`, redacted `target`): decoding and redaction are functions of the bytes. The converse does
/// not hold (invalid UTF-8 decodes to the same replacement characters), so a record that does not
/// match may still repeat the request: a consumer then decodes it, as it would have anyway.
///
/// Compared a word (8 bytes) at a time, not with `memcmp`: the texts are short (`GET`, a `Host`
/// of 15 bytes, a target of 7), and the three calls (~55 instructions) cost as much as the rest of
/// the comparison. A text's last word is read whole from the slot and masked to the text's length:
/// the slot's text arrays (16, 512 and 256 bytes) are whole words, so such a read stays inside its
/// array.
public struct HTTPRequestBytes {
  private var isTLS: UInt8 = 0
  /// -1 until a request is captured: then no record matches.
  private var methodLength = -1
  private var targetLength = -1
  private var hostLength = -1
  /// The method's, the target's and the `Host`'s bytes, each from a word boundary, its last word
  /// zero past its length. The storage is kept from one request to the next.
  private var words: [UInt64] = []

  /// Bytes that no record matches.
  public init() {}

  /// Takes the request of `http`, which the next records are compared with.
  public mutating func capture(_ http: HTTPRecordView) {
    let request = http.record.pointer(to: \.httpRequest)!
    let method = request.methodBytes
    let target = request.targetBytes
    let host = request.hostBytes
    isTLS = http.record.pointee.core.isTLS
    methodLength = method.count
    targetLength = target.count
    hostLength = host.count
    // What lets `word` read a text's last word whole (see above).
    precondition(HTTPHead.methodCapacity % 8 == 0 && HTTPHead.targetCapacity % 8 == 0 && HTTPHead.hostCapacity % 8 == 0)
    words.removeAll(keepingCapacity: true)
    words.reserveCapacity((method.count + 7) / 8 + (target.count + 7) / 8 + (host.count + 7) / 8)
    Self.append(method, to: &words)
    Self.append(target, to: &words)
    Self.append(host, to: &words)
  }

  /// Makes these bytes match no record, keeping their storage for the next ``capture(_:)``.
  public mutating func forget() {
    methodLength = -1
    targetLength = -1
    hostLength = -1
  }

  /// Whether `http`'s request has exactly the bytes captured last: then it decodes to the same
  /// scheme, method, `Host` and target. The lengths first, then the target (where requests mostly
  /// differ), the `Host` and the method.
  public func matches(_ http: HTTPRecordView) -> Bool {
    let request = http.record.pointer(to: \.httpRequest)!
    let method = request.methodBytes
    let target = request.targetBytes
    let host = request.hostBytes
    guard
      target.count == targetLength && host.count == hostLength && method.count == methodLength
        && http.record.pointee.core.isTLS == isTLS
    else { return false }
    return words.withUnsafeBufferPointer { words in
      guard let captured = words.baseAddress else { return true }  // all three empty
      let targetWords = captured + (methodLength &+ 7) / 8
      return Self.equal(target, targetWords) && Self.equal(host, targetWords + (targetLength &+ 7) / 8)
        && Self.equal(method, captured)
    }
  }

  private static func append(_ text: UnsafeRawBufferPointer, to words: inout [UInt64]) {
    guard let bytes = text.baseAddress else { return }
    var offset = 0
    while offset < text.count {
      words.append(word(bytes, at: offset, count: text.count))
      offset &+= 8
    }
  }

  /// Whether `text` equals the words from `captured` on (of the same length).
  @inline(__always)
  private static func equal(_ text: UnsafeRawBufferPointer, _ captured: UnsafePointer<UInt64>) -> Bool {
    guard let bytes = text.baseAddress else { return true }
    let count = text.count
    var offset = 0
    var captured = captured
    while offset < count {
      if word(bytes, at: offset, count: count) != captured.pointee { return false }
      offset &+= 8
      captured += 1
    }
    return true
  }

  /// The 8 bytes of a text of `count` bytes from `offset`, the first in the low bits, those past
  /// its end as zero.
  @inline(__always)
  private static func word(_ text: UnsafeRawPointer, at offset: Int, count: Int) -> UInt64 {
    let value = UInt64(littleEndian: text.loadUnaligned(fromByteOffset: offset, as: UInt64.self))
    let rest = count &- offset
    return rest >= 8 ? value : value & ((1 &<< UInt64(truncatingIfNeeded: rest &* 8)) &- 1)
  }
}
