/// A strict RFC 8259 parser for one JSON text held in a UTF-8 buffer. Hand-written because the
/// monitor cannot import Foundation.
///
/// Safety against hostile input: nesting is limited (`maximumDepth`), every index is checked
/// before it is read, numbers are kept as text (no overflow while parsing), invalid UTF-8 inside
/// strings becomes U+FFFD, unpaired surrogate escapes become U+FFFD. Errors are thrown, never
/// trapped.
struct JSONParser {
  static let maximumDepth = 32

  private let input: UnsafeBufferPointer<UInt8>
  private var index = 0
  private var depth = 0

  private init(_ input: UnsafeBufferPointer<UInt8>) {
    self.input = input
  }

  /// Parses exactly one JSON value surrounded by optional whitespace.
  static func parse(_ input: UnsafeBufferPointer<UInt8>) throws(RecordDecodingError) -> JSONValue {
    var parser = JSONParser(input)
    parser.skipWhitespace()
    let value = try parser.parseValue()
    parser.skipWhitespace()
    guard parser.index == input.count else {
      throw parser.failure("unexpected data after the value")
    }
    return value
  }

  // MARK: - Values

  private mutating func parseValue() throws(RecordDecodingError) -> JSONValue {
    guard index < input.count else { throw failure("unexpected end of input") }
    switch input[index] {
    case UInt8(ascii: "{"): return try parseObject()
    case UInt8(ascii: "["): return try parseArray()
    case UInt8(ascii: "\""): return .string(try parseString())
    case UInt8(ascii: "t"):
      try expectLiteral("true")
      return .bool(true)
    case UInt8(ascii: "f"):
      try expectLiteral("false")
      return .bool(false)
    case UInt8(ascii: "n"):
      try expectLiteral("null")
      return .null
    case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
      return .number(try parseNumber())
    default:
      throw failure("unexpected character")
    }
  }

  private mutating func parseObject() throws(RecordDecodingError) -> JSONValue {
    try enterContainer()
    index += 1  // {
    var members: [(key: String, value: JSONValue)] = []
    skipWhitespace()
    if consume(UInt8(ascii: "}")) {
      depth -= 1
      return .object(members)
    }
    while true {
      skipWhitespace()
      guard index < input.count, input[index] == UInt8(ascii: "\"") else {
        throw failure("expected a string key")
      }
      let key = try parseString()
      skipWhitespace()
      guard consume(UInt8(ascii: ":")) else { throw failure("expected ':'") }
      skipWhitespace()
      let value = try parseValue()
      members.append((key, value))
      skipWhitespace()
      if consume(UInt8(ascii: ",")) { continue }
      if consume(UInt8(ascii: "}")) { break }
      throw failure("expected ',' or '}'")
    }
    depth -= 1
    return .object(members)
  }

  private mutating func parseArray() throws(RecordDecodingError) -> JSONValue {
    try enterContainer()
    index += 1  // [
    var elements: [JSONValue] = []
    skipWhitespace()
    if consume(UInt8(ascii: "]")) {
      depth -= 1
      return .array(elements)
    }
    while true {
      skipWhitespace()
      elements.append(try parseValue())
      skipWhitespace()
      if consume(UInt8(ascii: ",")) { continue }
      if consume(UInt8(ascii: "]")) { break }
      throw failure("expected ',' or ']'")
    }
    depth -= 1
    return .array(elements)
  }

  private mutating func enterContainer() throws(RecordDecodingError) {
    depth += 1
    guard depth <= Self.maximumDepth else {
      throw failure("nesting deeper than \(Self.maximumDepth)")
    }
  }

  // MARK: - Strings

  private mutating func parseString() throws(RecordDecodingError) -> String {
    index += 1  // opening quote
    let start = index
    // Fast path: no escapes, so the bytes are the string.
    while index < input.count {
      let byte = input[index]
      if byte == UInt8(ascii: "\"") {
        let text = String(
          decoding: UnsafeBufferPointer(rebasing: input[start..<index]), as: UTF8.self)
        index += 1
        return text
      }
      if byte == UInt8(ascii: "\\") { break }
      if byte < 0x20 { throw failure("control character in a string") }
      index += 1
    }
    var bytes = Array(UnsafeBufferPointer(rebasing: input[start..<min(index, input.count)]))
    while index < input.count {
      let byte = input[index]
      if byte == UInt8(ascii: "\"") {
        index += 1
        return String(decoding: bytes, as: UTF8.self)
      }
      if byte < 0x20 { throw failure("control character in a string") }
      if byte != UInt8(ascii: "\\") {
        bytes.append(byte)
        index += 1
        continue
      }
      index += 1
      guard index < input.count else { break }
      let escape = input[index]
      index += 1
      switch escape {
      case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): bytes.append(escape)
      case UInt8(ascii: "b"): bytes.append(0x08)
      case UInt8(ascii: "f"): bytes.append(0x0C)
      case UInt8(ascii: "n"): bytes.append(0x0A)
      case UInt8(ascii: "r"): bytes.append(0x0D)
      case UInt8(ascii: "t"): bytes.append(0x09)
      case UInt8(ascii: "u"): appendUTF8(of: try parseUnicodeEscape(), to: &bytes)
      default: throw failure("invalid escape")
      }
    }
    throw failure("unterminated string")
  }

  /// Reads the four hex digits after `\u` (and a following `\uDCxx` for a high surrogate);
  /// an unpaired surrogate becomes U+FFFD.
  private mutating func parseUnicodeEscape() throws(RecordDecodingError) -> Unicode.Scalar {
    let first = try parseHex4()
    if (0xD800...0xDBFF).contains(first) {
      if index + 1 < input.count, input[index] == UInt8(ascii: "\\"),
        input[index + 1] == UInt8(ascii: "u")
      {
        let saved = index
        index += 2
        let second = try parseHex4()
        if (0xDC00...0xDFFF).contains(second) {
          let value = 0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00)
          return Unicode.Scalar(value) ?? "\u{FFFD}"
        }
        index = saved  // not a low surrogate: read it again on its own
      }
      return "\u{FFFD}"
    }
    return Unicode.Scalar(first) ?? "\u{FFFD}"
  }

  private mutating func parseHex4() throws(RecordDecodingError) -> UInt32 {
    guard index + 4 <= input.count else { throw failure("truncated \\u escape") }
    var value: UInt32 = 0
    for _ in 0..<4 {
      let byte = input[index]
      let digit: UInt8
      switch byte {
      case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
      case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
      case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
      default: throw failure("invalid hex digit in \\u escape")
      }
      value = value << 4 | UInt32(digit)
      index += 1
    }
    return value
  }

  private func appendUTF8(of scalar: Unicode.Scalar, to bytes: inout [UInt8]) {
    UTF8.encode(scalar) { bytes.append($0) }
  }

  // MARK: - Numbers and literals

  /// Checks JSON's number grammar, `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`, and returns
  /// the text.
  private mutating func parseNumber() throws(RecordDecodingError) -> String {
    let start = index
    _ = consume(UInt8(ascii: "-"))
    guard index < input.count else { throw failure("truncated number") }
    if input[index] == UInt8(ascii: "0") {
      index += 1
    } else if !digits() {
      throw failure("expected a digit")
    }
    if consume(UInt8(ascii: ".")) {
      guard digits() else { throw failure("expected a digit after '.'") }
    }
    if index < input.count, input[index] == UInt8(ascii: "e") || input[index] == UInt8(ascii: "E") {
      index += 1
      if !consume(UInt8(ascii: "+")) { _ = consume(UInt8(ascii: "-")) }
      guard digits() else { throw failure("expected a digit in the exponent") }
    }
    return String(decoding: UnsafeBufferPointer(rebasing: input[start..<index]), as: UTF8.self)
  }

  /// Skips `[0-9]+`; false when there was no digit.
  private mutating func digits() -> Bool {
    let start = index
    while index < input.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(input[index]) {
      index += 1
    }
    return index > start
  }

  private mutating func expectLiteral(_ literal: StaticString) throws(RecordDecodingError) {
    let length = literal.utf8CodeUnitCount
    guard index + length <= input.count else { throw failure("truncated literal") }
    let matches = literal.withUTF8Buffer { expected in
      UnsafeBufferPointer(rebasing: input[index..<index + length]).elementsEqual(expected)
    }
    guard matches else { throw failure("invalid literal") }
    index += length
  }

  private mutating func consume(_ byte: UInt8) -> Bool {
    guard index < input.count, input[index] == byte else { return false }
    index += 1
    return true
  }

  private mutating func skipWhitespace() {
    while index < input.count {
      switch input[index] {
      case UInt8(ascii: " "), UInt8(ascii: "\t"), UInt8(ascii: "\n"), UInt8(ascii: "\r"): index += 1
      default: return
      }
    }
  }

  private func failure(_ reason: String) -> RecordDecodingError {
    .malformedJSON(offset: index, reason: reason)
  }
}
