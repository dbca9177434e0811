import CNetMonitor

/// Byte classes of RFC 9110/9112, as branch-light predicates over literal bit masks: no table in global
/// storage, so nothing is lazily initialised (and nothing locks or allocates) the first time a hook runs.
enum HTTPByteClass {
  @inline(__always) static var cr: UInt8 { UInt8(ascii: "\r") }
  @inline(__always) static var lf: UInt8 { UInt8(ascii: "\n") }
  @inline(__always) static var space: UInt8 { UInt8(ascii: " ") }
  @inline(__always) static var tab: UInt8 { UInt8(ascii: "\t") }
  @inline(__always) static var colon: UInt8 { UInt8(ascii: ":") }
  @inline(__always) static var comma: UInt8 { UInt8(ascii: ",") }
  @inline(__always) static var semicolon: UInt8 { UInt8(ascii: ";") }

  /// `tchar`: ``!#$%&'*+-.^_`|~``, digits and letters (RFC 9110 §5.6.2).
  @inline(__always)
  static func isToken(_ byte: UInt8) -> Bool {
    if byte < 64 { return (0x03FF_6CFA_0000_0000 as UInt64) >> byte & 1 != 0 }
    if byte < 128 { return (0x57FF_FFFF_C7FF_FFFE as UInt64) >> (byte &- 64) & 1 != 0 }
    return false
  }

  /// A byte of a method as clients send them: upper-case letters, `-` and `_`. Stricter than `tchar`
  /// on purpose: it is what recognises a stream as HTTP in its first bytes.
  @inline(__always)
  static func isMethod(_ byte: UInt8) -> Bool {
    (byte >= 0x41 && byte <= 0x5A) || byte == 0x2D || byte == 0x5F
  }

  /// A byte allowed in a field value, reason phrase or chunk extension: HTAB, SP, VCHAR, obs-text.
  @inline(__always)
  static func isFieldText(_ byte: UInt8) -> Bool {
    byte == tab || (byte >= 0x20 && byte != 0x7F)
  }

  /// A byte allowed in a request target: VCHAR and (leniently) obs-text.
  @inline(__always)
  static func isTarget(_ byte: UInt8) -> Bool {
    byte > 0x20 && byte != 0x7F
  }

  @inline(__always)
  static func isWhitespace(_ byte: UInt8) -> Bool { byte == space || byte == tab }

  /// The value of a decimal digit, or `nil`.
  @inline(__always)
  static func decimal(_ byte: UInt8) -> UInt64? {
    let value = byte &- 0x30
    return value < 10 ? UInt64(value) : nil
  }

  /// The value of a hexadecimal digit, or `nil`.
  @inline(__always)
  static func hexadecimal(_ byte: UInt8) -> UInt64? {
    let digit = byte &- 0x30
    if digit < 10 { return UInt64(digit) }
    let letter = (byte | 0x20) &- 0x61
    return letter < 6 ? UInt64(letter) + 10 : nil
  }

  /// The index of the first byte of `base[start..<count]` that is below `limit` (at most 128) or DEL,
  /// or `count`. Sixteen bytes at a time (`cnm_text_end`, cnm_http_scan.h): text runs are the bulk of
  /// a head, and byte-wise tests cost several instructions per byte.
  @inline(__always)
  static func firstByte(below limit: UInt8, orDELIn base: UnsafeRawPointer, from start: Int, count: Int)
    -> Int
  {
    Int(cnm_text_end(base.assumingMemoryBound(to: UInt8.self), start, count, limit))
  }

  /// The index of the first byte from `start` that is not an ASCII letter, digit or `-` (the bytes of
  /// almost every header name, all of them ``isToken(_:)``), or `count`; sixteen bytes at a time
  /// (`cnm_name_bytes_end`, cnm_http_scan.h).
  @inline(__always)
  static func commonTokenEnd(_ base: UnsafeRawPointer, from start: Int, count: Int) -> Int {
    Int(cnm_name_bytes_end(base.assumingMemoryBound(to: UInt8.self), start, count))
  }

  /// The index of the first byte of `base[start..<count]` that is not ``isFieldText(_:)``, or `count`.
  @inline(__always)
  static func fieldTextEnd(_ base: UnsafeRawPointer, from start: Int, count: Int) -> Int {
    var index = start
    while true {
      index = firstByte(below: 0x20, orDELIn: base, from: index, count: count)
      guard index < count, base.load(fromByteOffset: index, as: UInt8.self) == tab else { return index }
      index &+= 1
    }
  }

  /// The index of the first byte of `base[start..<count]` that is not ``isTarget(_:)``, or `count`.
  @inline(__always)
  static func targetEnd(_ base: UnsafeRawPointer, from start: Int, count: Int) -> Int {
    firstByte(below: 0x21, orDELIn: base, from: start, count: count)
  }

  /// Whether the token bytes at `bytes` spell `literal` (lower-case letters and `-`, at least four
  /// bytes) in any case. Compared a word at a time: setting the 0x20 bits folds a letter to lower case,
  /// and folds no other token byte onto a letter or `-`.
  @inline(__always)
  static func tokenEquals(_ bytes: UnsafeRawPointer, _ literal: StaticString) -> Bool {
    let expected = UnsafeRawPointer(literal.utf8Start)
    let length = literal.utf8CodeUnitCount
    if length < 8 {  // two words of four, overlapping when shorter than eight
      return bytes.loadUnaligned(as: UInt32.self) | 0x2020_2020 == expected.loadUnaligned(as: UInt32.self)
        && bytes.loadUnaligned(fromByteOffset: length &- 4, as: UInt32.self) | 0x2020_2020
          == expected.loadUnaligned(fromByteOffset: length &- 4, as: UInt32.self)
    }
    var offset = 0
    while offset < length {  // words of eight, the last one overlapping the one before
      let at = min(offset, length &- 8)
      guard bytes.loadUnaligned(fromByteOffset: at, as: UInt64.self) | 0x2020_2020_2020_2020
        == expected.loadUnaligned(fromByteOffset: at, as: UInt64.self)
      else { return false }
      offset &+= 8
    }
    return true
  }

  /// `HTTP/1.` as the low seven bytes of a little-endian word.
  static var versionPrefixWord: UInt64 { 0x002E_312F_5054_5448 }

  /// Byte `index` of `HTTP/1.`, the version prefix of request and status lines.
  @inline(__always)
  static func versionPrefix(_ index: UInt8) -> UInt8 {
    switch index {
    case 0: 0x48  // H
    case 1, 2: 0x54  // T
    case 3: 0x50  // P
    case 4: 0x2F  // /
    case 5: 0x31  // 1
    default: 0x2E  // .
    }
  }
}
