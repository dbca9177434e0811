/// The request of an http record as its slot holds it — scheme, method, `Host` and target bytes,
/// before any decoding or redaction — kept to recognise the next record that repeats it without
/// decoding that one. Equal bytes decode to equal ``HTTPRecord`` fields (`scheme`, `method`,
/// `host`, redacted `target`): decoding and redaction are functions of the bytes. The converse does
/// not hold (invalid UTF-8 decodes to the same replacement characters), so a record that does not
/// match may still repeat the request: a consumer then decodes it, as it would have anyway.
///
/// Compared a word (8 bytes) at a time, not with `memcmp`: the text is short (`GET`, a `Host` of 15
/// bytes and a target of 7, packed: ``HTTPHead/text``), and a call costs as much as the rest of the
/// comparison. The text's last word is read whole from the slot and masked to the text's length:
/// the slot's text array (784 bytes) is whole words, so such a read stays inside it.
public struct HTTPRequestBytes {
  private var isTLS: UInt8 = 0
  /// The target is an HTTP/2 `:path`'s Huffman code (equal codes decode alike; a code and text do not).
  private var targetIsHuffmanCode = false
  /// -1 until a request is captured: then no record matches.
  private var methodLength = -1
  private var targetLength = -1
  private var hostLength = -1
  /// The packed text's bytes, its last word zero past its length. The storage is kept from one
  /// request to the next.
  private var words: [UInt64] = []

  /// Bytes that no record matches.
  public init() {}

  /// Takes the request of `http`, which the next records are compared with.
  public mutating func capture(_ http: HTTPRecordView) {
    let request = http.record.pointer(to: \.httpRequest)!
    isTLS = http.record.pointee.core.isTLS
    targetIsHuffmanCode = http.record.targetIsHuffmanCode
    (methodLength, targetLength, hostLength) = request.textLengths
    // What lets `word` read the text's last word whole (see above).
    precondition(HTTPHead.textCapacity % 8 == 0)
    let text = request.textBytes
    words.removeAll(keepingCapacity: true)
    words.reserveCapacity((text.count + 7) / 8)
    guard let bytes = text.baseAddress else { return }
    var offset = 0
    while offset < text.count {
      words.append(Self.word(bytes, at: offset, count: text.count))
      offset &+= 8
    }
  }

  /// Makes these bytes match no record, keeping their storage for the next ``capture(_:)``.
  public mutating func forget() {
    methodLength = -1
    targetLength = -1
    hostLength = -1
  }

  /// Whether `http`'s request has exactly the bytes captured last: then it decodes to the same
  /// scheme, method, `Host` and target. The lengths first, then the text.
  public func matches(_ http: HTTPRecordView) -> Bool {
    let request = http.record.pointer(to: \.httpRequest)!
    let lengths = request.textLengths
    guard
      lengths.target == targetLength && lengths.host == hostLength && lengths.method == methodLength
        && http.record.pointee.core.isTLS == isTLS && http.record.targetIsHuffmanCode == targetIsHuffmanCode
    else { return false }
    let count = lengths.method &+ lengths.target &+ lengths.host
    guard count > 0 else { return true }  // all three empty
    let bytes = UnsafeRawPointer(request.pointer(to: \.text)!)
    return words.withUnsafeBufferPointer { words in
      var offset = 0
      var captured = words.baseAddress.unsafelyUnwrapped  // as many words as `count` needs
      while offset < count {
        if Self.word(bytes, at: offset, count: count) != captured.pointee { return false }
        offset &+= 8
        captured += 1
      }
      return true
    }
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
