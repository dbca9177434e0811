/// Builds one JSON object as UTF-8 bytes, field by field, in the order the fields are written.
///
/// Only what records need: objects whose keys are static ASCII names, strings, exact integers,
/// milliseconds as decimals, booleans, `null`, arrays of strings and nested error objects.
/// Strings are escaped so any Swift `String` yields valid JSON (a Swift `String` is always valid
/// UTF-8: bytes from the wire decoded with `String(decoding:as:)` already carry U+FFFD for
/// invalid sequences).
struct JSONWriter {
  private(set) var bytes: [UInt8]
  private var needsComma = false

  init(reservingCapacity capacity: Int = 384) {
    bytes = []
    bytes.reserveCapacity(capacity)
  }

  /// A writer that appends to the bytes of `buffer`, which it takes over (leaving `buffer` empty)
  /// until ``finish(into:)`` hands them back: one buffer for many records.
  init(appendingTo buffer: inout [UInt8]) {
    bytes = []
    swap(&bytes, &buffer)
  }

  /// Hands the bytes back to the buffer given to ``init(appendingTo:)``.
  mutating func finish(into buffer: inout [UInt8]) {
    swap(&bytes, &buffer)
  }

  mutating func beginObject() {
    bytes.append(UInt8(ascii: "{"))
    needsComma = false
  }

  mutating func endObject() {
    bytes.append(UInt8(ascii: "}"))
    needsComma = true
  }

  /// Writes `,"key":` (or `"key":` for the first field). Keys are static snake_case ASCII.
  mutating func key(_ key: StaticString) {
    // Assembled on the stack and appended at once: an append per byte cost more than the key.
    let comma = needsComma ? 1 : 0
    let count = comma + key.utf8CodeUnitCount + 3
    withUnsafeTemporaryAllocation(of: UInt8.self, capacity: count) { text in
      if comma == 1 { text[0] = UInt8(ascii: ",") }
      text[comma] = UInt8(ascii: "\"")
      key.withUTF8Buffer { name in
        UnsafeMutableRawBufferPointer(rebasing: UnsafeMutableRawBufferPointer(text)[(comma + 1)...])
          .copyMemory(from: UnsafeRawBufferPointer(name))
      }
      text[count - 2] = UInt8(ascii: "\"")
      text[count - 1] = UInt8(ascii: ":")
      bytes.append(contentsOf: UnsafeBufferPointer(text))
    }
    needsComma = false
  }

  mutating func null() {
    appendLiteral("null")
  }

  mutating func bool(_ value: Bool) {
    appendLiteral(value ? "true" : "false")
  }

  mutating func string(_ value: String?) {
    guard let value else { return null() }
    bytes.append(UInt8(ascii: "\""))
    var text = value
    text.withUTF8 { appendEscaped($0) }
    bytes.append(UInt8(ascii: "\""))
    needsComma = true
  }

  mutating func strings(_ values: [String]) {
    bytes.append(UInt8(ascii: "["))
    for (index, value) in values.enumerated() {
      if index > 0 { bytes.append(UInt8(ascii: ",")) }
      string(value)
    }
    bytes.append(UInt8(ascii: "]"))
    needsComma = true
  }

  mutating func integer(_ value: UInt64?) {
    guard let value else { return null() }
    appendDigits(of: value)
    needsComma = true
  }

  mutating func integer(_ value: Int64?) {
    guard let value else { return null() }
    if value < 0 { bytes.append(UInt8(ascii: "-")) }
    appendDigits(of: value.magnitude)
    needsComma = true
  }

  /// A duration in milliseconds, rounded to microseconds and written with at most three decimals
  /// and at least one (`12.345`, `2.5`, `0.0`). Not-a-number and infinities are `null`: JSON has
  /// no spelling for them. Magnitudes beyond 2^53 µs (285 years) keep Swift's shortest form.
  mutating func milliseconds(_ value: Double?) {
    guard let value, value.isFinite else { return null() }
    let micros = (value * 1000).rounded()
    guard micros.magnitude < 9_007_199_254_740_992 else {
      appendLiteral(value.description)
      return
    }
    let scaled = Int64(micros)
    if scaled < 0 { bytes.append(UInt8(ascii: "-")) }
    let magnitude = scaled.magnitude
    appendDigits(of: magnitude / 1000)
    bytes.append(UInt8(ascii: "."))
    var fraction = magnitude % 1000
    var digits = 3
    while digits > 1 && fraction % 10 == 0 {
      fraction /= 10
      digits -= 1
    }
    var divisor: UInt64 = digits == 3 ? 100 : digits == 2 ? 10 : 1
    while divisor > 0 {
      bytes.append(UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: fraction / divisor % 10))
      divisor /= 10
    }
    needsComma = true
  }

  /// Writes a nested error object, or `null`.
  mutating func error(_ value: RecordedError?) {
    guard let value else { return null() }
    beginObject()
    key("call")
    string(value.call)
    key("code")
    string(value.code)
    key("message")
    string(value.message)
    endObject()
  }

  /// Ends the line with `\n` (JSON Lines' record separator).
  mutating func newline() {
    bytes.append(UInt8(ascii: "\n"))
  }

  // MARK: - Bytes

  private mutating func appendLiteral(_ text: String) {
    bytes.append(contentsOf: text.utf8)
    needsComma = true
  }

  private mutating func appendDigits(of value: UInt64) {
    if value < 10 {
      bytes.append(UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: value))
      return
    }
    // Least significant digit first, from the end of a stack buffer: no temporary String or array.
    withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 20) { digits in
      var start = digits.count
      var rest = value
      while rest > 0 {
        start -= 1
        digits[start] = UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: rest % 10)
        rest /= 10
      }
      bytes.append(contentsOf: UnsafeBufferPointer(rebasing: digits[start...]))
    }
  }

  private static let hexDigits: [UInt8] = Array("0123456789abcdef".utf8)

  /// Escapes `"`, `\`, the C0 controls and DEL as `\u00XX`-style escapes (`\"`, `\\` for the
  /// first two), U+2028/U+2029 (legal JSON, but line breaks to JavaScript and to some
  /// line-oriented readers) and U+FEFF (invisible, and stripped by some readers, Foundation's
  /// among them, at the start of a string). Every other byte of the valid UTF-8 input passes
  /// through.
  private mutating func appendEscaped(_ utf8: UnsafeBufferPointer<UInt8>) {
    var runStart = 0
    var index = 0
    let count = utf8.count
    while index < count {
      let byte = utf8[index]
      let escapeLength: Int
      if byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") || byte < 0x20 || byte == 0x7F {
        escapeLength = 1
      } else if byte == 0xE2, index + 2 < count, utf8[index + 1] == 0x80,
        utf8[index + 2] == 0xA8 || utf8[index + 2] == 0xA9
      {
        escapeLength = 3
      } else if byte == 0xEF, index + 2 < count, utf8[index + 1] == 0xBB, utf8[index + 2] == 0xBF {
        escapeLength = 3
      } else {
        index += 1
        continue
      }
      bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart..<index]))
      bytes.append(UInt8(ascii: "\\"))
      switch byte {
      case UInt8(ascii: "\""), UInt8(ascii: "\\"):
        bytes.append(byte)
      case 0xE2:
        bytes.append(contentsOf: "u202".utf8)
        bytes.append(utf8[index + 2] == 0xA8 ? UInt8(ascii: "8") : UInt8(ascii: "9"))
      case 0xEF:
        bytes.append(contentsOf: "ufeff".utf8)
      default:
        bytes.append(contentsOf: "u00".utf8)
        bytes.append(Self.hexDigits[Int(byte >> 4)])
        bytes.append(Self.hexDigits[Int(byte & 0xF)])
      }
      index += escapeLength
      runStart = index
    }
    bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart..<count]))
  }
}
