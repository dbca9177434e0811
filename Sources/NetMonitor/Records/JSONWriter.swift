/// Builds JSON objects as UTF-8 bytes, field by field, in the order the fields are written.
///
/// Only what records need: objects whose keys are static ASCII names, strings, exact integers,
/// milliseconds as decimals, booleans, `null`, arrays of strings and nested error objects.
/// Strings are escaped so any Swift `String` yields valid JSON (a Swift `String` is always valid
/// UTF-8: bytes from the wire decoded with `String(decoding:as:)` already carry U+FFFD for
/// invalid sequences).
///
/// A writer lives for one call of ``append(to:_:)``, and writes with plain stores into a scratch
/// buffer on the stack, checking the room left once a field; the bytes reach the array when the
/// buffer fills and at the end of the call. `elfhook run --output` writes a line for every record
/// of a busy server, on the CPUs the server runs on: an array append per field (a uniqueness and a
/// capacity check, a generic copy), a `memcpy` call per key and a test per byte of a string cost
/// more than the fields themselves.
struct JSONWriter {
  /// The scratch buffer's size: a whole record's line but for long strings, which pass through
  /// it in parts.
  static let scratchCapacity = 1024
  /// The most bytes a field writes besides a string's: a key, or a number.
  private static let fieldCapacity = 64

  /// The bytes written and moved out of the scratch buffer.
  private var output: [UInt8] = []
  /// The scratch buffer (``scratchCapacity`` bytes), valid during ``append(to:_:)``'s call.
  private let scratch: UnsafeMutablePointer<UInt8>
  /// How many bytes of the scratch buffer are written.
  private var count = 0
  private var needsComma = false

  private init(scratch: UnsafeMutablePointer<UInt8>) {
    self.scratch = scratch
  }

  /// Calls `body` with a writer, and appends what it wrote to `buffer`: one buffer for many
  /// records.
  static func append(to buffer: inout [UInt8], _ body: (inout JSONWriter) -> Void) {
    withUnsafeTemporaryAllocation(of: UInt8.self, capacity: scratchCapacity) { scratch in
      var writer = JSONWriter(scratch: scratch.baseAddress!)
      swap(&writer.output, &buffer)
      body(&writer)
      writer.flush()
      swap(&writer.output, &buffer)
    }
  }

  /// The bytes `body` writes.
  static func bytes(_ body: (inout JSONWriter) -> Void) -> [UInt8] {
    var bytes: [UInt8] = []
    append(to: &bytes, body)
    return bytes
  }

  mutating func beginObject() {
    append(UInt8(ascii: "{"))
    needsComma = false
  }

  mutating func endObject() {
    append(UInt8(ascii: "}"))
    needsComma = true
  }

  /// Writes `,"key":` (or `"key":` for the first field). Keys are static snake_case ASCII of at
  /// most 32 bytes.
  mutating func key(_ key: StaticString) {
    key.withUTF8Buffer { name in
      precondition(name.count <= 32, "JSON keys are at most 32 bytes")
      let to = room(Self.fieldCapacity)
      var at = 0
      if needsComma {
        to[0] = UInt8(ascii: ",")
        at = 1
      }
      to[at] = UInt8(ascii: "\"")
      Self.copyShort(name.baseAddress!, to: to + (at &+ 1), count: name.count)
      at &+= name.count &+ 1
      to[at] = UInt8(ascii: "\"")
      to[at &+ 1] = UInt8(ascii: ":")
      count &+= at &+ 2
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
    guard var text = value else { return null() }
    text.withUTF8 { appendQuoted($0) }
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
      text.withUTF8 { appendBytes($0) }
      needsComma = true
      return
    }
    let scaled = Int64(micros)
    if scaled < 0 { append(UInt8(ascii: "-")) }
    let magnitude = scaled.magnitude
    appendDigits(of: magnitude / 1000)
    var fraction = magnitude % 1000
    var digits = 3
    while digits > 1 && fraction % 10 == 0 {
      fraction /= 10
      digits -= 1
    }
    let to = room(Self.fieldCapacity)
    to[0] = UInt8(ascii: ".")
    for index in stride(from: digits, to: 0, by: -1) {
      to[index] = UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: fraction % 10)
      fraction /= 10
    }
    count &+= digits &+ 1
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

  /// Where the next `length` bytes go (`length` ≤ ``scratchCapacity``): after those written,
  /// which move to the array first when the rest of the scratch buffer is too small.
  @inline(__always)
  private mutating func room(_ length: Int) -> UnsafeMutablePointer<UInt8> {
    if length > Self.scratchCapacity &- count { flush() }
    return scratch + count
  }

  /// Moves the bytes written to the array.
  private mutating func flush() {
    guard count > 0 else { return }
    output.append(contentsOf: UnsafeBufferPointer(start: scratch, count: count))
    count = 0
  }

  @inline(__always)
  private mutating func append(_ byte: UInt8) {
    room(1).pointee = byte
    count &+= 1
  }

  private mutating func appendLiteral(_ text: StaticString) {
    text.withUTF8Buffer { literal in
      Self.copyShort(literal.baseAddress!, to: room(Self.fieldCapacity), count: literal.count)
      count &+= literal.count
    }
  }

  /// Appends `bytes` as they are, through the scratch buffer when they fit in what is left of it.
  private mutating func appendBytes(_ bytes: UnsafeBufferPointer<UInt8>) {
    guard let source = bytes.baseAddress, !bytes.isEmpty else { return }
    if bytes.count > Self.scratchCapacity &- count {
      flush()
      if bytes.count > Self.scratchCapacity {
        output.append(contentsOf: bytes)
        return
      }
    }
    let to = scratch + count
    if bytes.count <= 32 {
      Self.copyShort(source, to: to, count: bytes.count)
    } else {
      to.update(from: source, count: bytes.count)
    }
    count &+= bytes.count
  }

  /// Copies `count` bytes (at most 32) as two to four overlapping words, not through a call to
  /// `memcpy`: a key, a literal, a method or a host name.
  @inline(__always)
  private static func copyShort(
    _ source: UnsafePointer<UInt8>, to target: UnsafeMutablePointer<UInt8>, count: Int
  ) {
    let from = UnsafeRawPointer(source)
    let to = UnsafeMutableRawPointer(target)
    if count >= 8 {
      to.storeBytes(of: from.loadUnaligned(as: UInt64.self), as: UInt64.self)
      if count > 16 {
        to.storeBytes(of: from.loadUnaligned(fromByteOffset: 8, as: UInt64.self), toByteOffset: 8, as: UInt64.self)
        to.storeBytes(
          of: from.loadUnaligned(fromByteOffset: count &- 16, as: UInt64.self), toByteOffset: count &- 16, as: UInt64.self)
      }
      to.storeBytes(
        of: from.loadUnaligned(fromByteOffset: count &- 8, as: UInt64.self), toByteOffset: count &- 8, as: UInt64.self)
    } else if count >= 4 {
      to.storeBytes(of: from.loadUnaligned(as: UInt32.self), as: UInt32.self)
      to.storeBytes(
        of: from.loadUnaligned(fromByteOffset: count &- 4, as: UInt32.self), toByteOffset: count &- 4, as: UInt32.self)
    } else {
      for index in 0..<count { target[index] = source[index] }
    }
  }

  /// Writes `value`'s digits, two at a time from the last.
  private mutating func appendDigits(of value: UInt64) {
    var digits = 1
    var threshold: UInt64 = 10
    while digits < 20 && value >= threshold {
      digits &+= 1
      threshold = threshold &* 10
    }
    let to = room(Self.fieldCapacity)
    var rest = value
    var end = digits
    while rest >= 10 {
      let pair = UInt8(truncatingIfNeeded: rest % 100)
      rest /= 100
      end &-= 2
      to[end] = UInt8(ascii: "0") &+ pair / 10
      to[end &+ 1] = UInt8(ascii: "0") &+ pair % 10
    }
    if end == 1 { to[0] = UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: rest) }
    count &+= digits
  }

  /// How many of `utf8`'s first bytes need no escape: printable ASCII but `"` and `\`. Eight
  /// bytes at a time, the last eight overlapping those before.
  private static func plainPrefix(_ utf8: UnsafeBufferPointer<UInt8>) -> Int {
    guard let base = utf8.baseAddress else { return 0 }
    let count = utf8.count
    guard count >= 8 else {
      var index = 0
      while index < count && !needsEscape(base[index]) { index &+= 1 }
      return index
    }
    let raw = UnsafeRawPointer(base)
    var index = 0
    while index &+ 8 <= count {
      let found = escapes(in: raw.loadUnaligned(fromByteOffset: index, as: UInt64.self))
      if found != 0 { return index &+ found.trailingZeroBitCount / 8 }
      index &+= 8
    }
    guard index < count else { return count }
    // The last eight bytes, those already read masked off.
    let last = count &- 8
    let found = escapes(in: raw.loadUnaligned(fromByteOffset: last, as: UInt64.self)) & (~0 << ((index &- last) &* 8))
    return found == 0 ? count : last &+ found.trailingZeroBitCount / 8
  }

  /// Whether `byte` is not printable ASCII, or is `"` or `\`: one that may need an escape (every
  /// ASCII one of them does; of the bytes beyond ASCII, `appendEscaped` tells).
  @inline(__always)
  private static func needsEscape(_ byte: UInt8) -> Bool {
    byte &- 0x20 >= 0x5F || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\")
  }

  /// The bytes of the word `bytes` (little-endian) that need an escape, each as its top bit:
  /// exact up to the first (a borrow or carry may mark bytes after it). A byte below 0x20,
  /// above 0x7E (DEL, and the bytes of UTF-8 beyond ASCII, which `appendEscaped` reads), `"`
  /// or `\`.
  @inline(__always)
  private static func escapes(in bytes: UInt64) -> UInt64 {
    let ones: UInt64 = 0x0101_0101_0101_0101
    let tops: UInt64 = 0x8080_8080_8080_8080
    let control = (bytes &- ones &* 0x20) & ~bytes
    let high = (bytes &+ ones) | bytes
    let quote = bytes ^ (ones &* 0x22)
    let backslash = bytes ^ (ones &* 0x5C)
    return (control | high | ((quote &- ones) & ~quote) | ((backslash &- ones) & ~backslash)) & tops
  }

  /// Writes `"…"`: the bytes as they are when none needs an escape, else escaped.
  private mutating func appendQuoted(_ utf8: UnsafeBufferPointer<UInt8>) {
    let plain = Self.plainPrefix(utf8)
    if plain == utf8.count && utf8.count <= 32 {
      let to = room(Self.fieldCapacity)
      to[0] = UInt8(ascii: "\"")
      if let source = utf8.baseAddress { Self.copyShort(source, to: to + 1, count: utf8.count) }
      to[utf8.count &+ 1] = UInt8(ascii: "\"")
      count &+= utf8.count &+ 2
      return
    }
    append(UInt8(ascii: "\""))
    appendBytes(UnsafeBufferPointer(rebasing: utf8[..<plain]))
    if plain < utf8.count { appendEscaped(utf8, from: plain) }
    append(UInt8(ascii: "\""))
  }

  private static let hexDigits: StaticString = "0123456789abcdef"

  /// Escapes `"`, `\`, the C0 controls and DEL as `\u00XX`-style escapes (`\"`, `\\` for the
  /// first two), U+2028/U+2029 (legal JSON, but line breaks to JavaScript and to some
  /// line-oriented readers) and U+FEFF (invisible, and stripped by some readers, Foundation's
  /// among them, at the start of a string). Every other byte of the valid UTF-8 input passes
  /// through. From byte `start` on.
  private mutating func appendEscaped(_ utf8: UnsafeBufferPointer<UInt8>, from start: Int) {
    var runStart = start
    var index = start
    let count = utf8.count
    while index < count {
      let byte = utf8[index]
      // Printable ASCII but `"` and `\`: most bytes, passed over in this one test.
      guard Self.needsEscape(byte) else {
        index += 1
        continue
      }
      let escapeLength: Int
      if byte < 0x80 {
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
      appendBytes(UnsafeBufferPointer(rebasing: utf8[runStart..<index]))
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
        append(Self.hexDigits.utf8Start[Int(byte >> 4)])
        append(Self.hexDigits.utf8Start[Int(byte & 0xF)])
      }
      index += escapeLength
      runStart = index
    }
    appendBytes(UnsafeBufferPointer(rebasing: utf8[runStart..<count]))
  }
}
