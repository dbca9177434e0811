/// Builds one JSON object as UTF-8 bytes, field by field, in the order the fields are written.
///
/// Only what records need: objects whose keys are static ASCII names, strings, exact integers,
/// milliseconds as decimals, booleans, `null`, arrays of strings and nested error objects.
/// Strings are escaped so any Swift `String` yields valid JSON (a Swift `String` is always valid
/// UTF-8: bytes from the wire decoded with `String(decoding:as:)` already carry U+FFFD for
/// invalid sequences).
///
/// Bytes are written to a small inline buffer first, and reach the array a buffer-full at a time:
/// an array append per field (a uniqueness and a capacity check, a generic copy) cost more than
/// the field, at every record `elfhook run --output` writes.
struct JSONWriter {
  /// The bytes written, but for the last ones, still `pending`.
  private var output: [UInt8]
  private var pending = InlineArray<256, UInt8>(repeating: 0)
  private var pendingCount = 0
  private var needsComma = false

  init(reservingCapacity capacity: Int = 384) {
    output = []
    output.reserveCapacity(capacity)
  }

  /// A writer that appends to the bytes of `buffer`, which it takes over (leaving `buffer` empty)
  /// until ``finish(into:)`` hands them back: one buffer for many records.
  init(appendingTo buffer: inout [UInt8]) {
    output = []
    swap(&output, &buffer)
  }

  /// The bytes written so far.
  var bytes: [UInt8] {
    var copy = self
    copy.flush()
    return copy.output
  }

  /// Hands the bytes back to the buffer given to ``init(appendingTo:)``.
  mutating func finish(into buffer: inout [UInt8]) {
    flush()
    swap(&output, &buffer)
  }

  mutating func beginObject() {
    append(UInt8(ascii: "{"))
    needsComma = false
  }

  mutating func endObject() {
    append(UInt8(ascii: "}"))
    needsComma = true
  }

  /// Writes `,"key":` (or `"key":` for the first field). Keys are static snake_case ASCII.
  mutating func key(_ key: StaticString) {
    let comma = needsComma
    key.withUTF8Buffer { name in
      write(atMost: name.count + 4) { output in
        var count = 0
        if comma {
          output[0] = UInt8(ascii: ",")
          count = 1
        }
        output[count] = UInt8(ascii: "\"")
        (output + count + 1).update(from: name.baseAddress!, count: name.count)
        count += name.count + 1
        output[count] = UInt8(ascii: "\"")
        output[count + 1] = UInt8(ascii: ":")
        return count + 2
      }
    }
    needsComma = false
  }

  mutating func null() {
    appendLiteral("null")
    needsComma = true
  }

  mutating func bool(_ value: Bool) {
    appendLiteral(value ? "true" : "false")
    needsComma = true
  }

  mutating func bool(_ value: Bool?) {
    guard let value else { return null() }
    bool(value)
  }

  mutating func string(_ value: String?) {
    guard let value else { return null() }
    append(UInt8(ascii: "\""))
    var text = value
    text.withUTF8 { appendEscaped($0) }
    append(UInt8(ascii: "\""))
    needsComma = true
  }

  mutating func strings(_ values: [String]) {
    append(UInt8(ascii: "["))
    for (index, value) in values.enumerated() {
      if index > 0 { append(UInt8(ascii: ",")) }
      string(value)
    }
    append(UInt8(ascii: "]"))
    needsComma = true
  }

  mutating func integer(_ value: UInt64?) {
    guard let value else { return null() }
    appendDigits(of: value)
    needsComma = true
  }

  mutating func integer(_ value: Int64?) {
    guard let value else { return null() }
    if value < 0 { append(UInt8(ascii: "-")) }
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
      var text = value.description
      text.withUTF8 { append(UnsafeRawBufferPointer($0)) }
      needsComma = true
      return
    }
    let scaled = Int64(micros)
    if scaled < 0 { append(UInt8(ascii: "-")) }
    let magnitude = scaled.magnitude
    appendDigits(of: magnitude / 1000)
    append(UInt8(ascii: "."))
    var fraction = magnitude % 1000
    var digits = 3
    while digits > 1 && fraction % 10 == 0 {
      fraction /= 10
      digits -= 1
    }
    var divisor: UInt64 = digits == 3 ? 100 : digits == 2 ? 10 : 1
    while divisor > 0 {
      append(UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: fraction / divisor % 10))
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
    append(UInt8(ascii: "\n"))
  }

  // MARK: - Bytes

  @inline(__always)
  private mutating func append(_ byte: UInt8) {
    if pendingCount == pending.count { flush() }
    pending[pendingCount] = byte
    pendingCount &+= 1
  }

  private mutating func append(_ text: UnsafeRawBufferPointer) {
    guard let source = text.baseAddress else { return }
    if text.count > pending.count - pendingCount {
      flush()
      guard text.count <= pending.count else {
        output.append(contentsOf: text)
        return
      }
    }
    let offset = pendingCount
    withUnsafeMutableBytes(of: &pending) {
      $0.baseAddress!.advanced(by: offset).copyMemory(from: source, byteCount: text.count)
    }
    pendingCount += text.count
  }

  /// Writes at most `count` bytes (no more than the pending buffer holds) straight into it: `body`
  /// gets where they go, and returns how many it wrote.
  private mutating func write(atMost count: Int, _ body: (UnsafeMutablePointer<UInt8>) -> Int) {
    if count > pending.count - pendingCount { flush() }
    let offset = pendingCount
    let written = withUnsafeMutableBytes(of: &pending) {
      body($0.baseAddress!.assumingMemoryBound(to: UInt8.self) + offset)
    }
    pendingCount += written
  }

  private mutating func appendLiteral(_ text: StaticString) {
    text.withUTF8Buffer { append(UnsafeRawBufferPointer($0)) }
  }

  /// Moves the pending bytes to `output`.
  private mutating func flush() {
    let count = pendingCount
    guard count > 0 else { return }
    withUnsafeBytes(of: &pending) { output.append(contentsOf: UnsafeRawBufferPointer(rebasing: $0[..<count])) }
    pendingCount = 0
  }

  private mutating func appendDigits(of value: UInt64) {
    if value < 10 {
      append(UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: value))
      return
    }
    // Written in place least significant digit first, then put in order: no temporary String.
    write(atMost: 20) { output in
      var count = 0
      var rest = value
      while rest > 0 {
        output[count] = UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: rest % 10)
        rest /= 10
        count += 1
      }
      var digits = UnsafeMutableBufferPointer(start: output, count: count)
      digits.reverse()
      return count
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
      // Printable ASCII but `"` and `\`: most bytes, passed over in this one test.
      if byte >= 0x20 && byte < 0x7F && byte != UInt8(ascii: "\"") && byte != UInt8(ascii: "\\") {
        index += 1
        continue
      }
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
      append(UnsafeRawBufferPointer(UnsafeBufferPointer(rebasing: utf8[runStart..<index])))
      append(UInt8(ascii: "\\"))
      switch byte {
      case UInt8(ascii: "\""), UInt8(ascii: "\\"):
        append(byte)
      case 0xE2:
        appendLiteral("u202")
        append(utf8[index + 2] == 0xA8 ? UInt8(ascii: "8") : UInt8(ascii: "9"))
      case 0xEF:
        appendLiteral("ufeff")
      default:
        appendLiteral("u00")
        append(Self.hexDigits[Int(byte >> 4)])
        append(Self.hexDigits[Int(byte & 0xF)])
      }
      index += escapeLength
      runStart = index
    }
    append(UnsafeRawBufferPointer(UnsafeBufferPointer(rebasing: utf8[runStart..<count])))
  }
}
