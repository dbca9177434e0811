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

  /// ASCII lower case.
  @inline(__always)
  static func lowercased(_ byte: UInt8) -> UInt8 {
    byte >= 0x41 && byte <= 0x5A ? byte | 0x20 : byte
  }

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
