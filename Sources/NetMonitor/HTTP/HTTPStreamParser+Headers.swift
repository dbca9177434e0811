extension HTTPStreamParser {
  /// Scans one byte of a header line. Names are matched case-insensitively; only the values of
  /// `Content-Length`, `Transfer-Encoding`, `Connection` and `Host` are parsed, the rest only checked for
  /// characters a field may not contain.
  @inline(__always)
  mutating func scanHeaderLine(_ byte: UInt8) -> ScanOutcome {
    switch phase {
    case .headerValue:
      if byte == HTTPByteClass.lf {
        guard endFieldValue() else { return .invalid }
        phase = .headerLineStart
        return .more
      }
      guard HTTPByteClass.isFieldText(byte) else { return .invalid }
      return withUnsafeBytes(of: byte) { valueBytes($0) } ? .more : .invalid

    case .headerName:
      if HTTPByteClass.isToken(byte) {
        withUnsafeBytes(of: byte) { appendScratch($0) }
        return .more
      }
      // Whitespace before the colon is forbidden (RFC 9112 §5.1), and so is a line without one.
      guard byte == HTTPByteClass.colon else { return .invalid }
      let length = Int(scratchLength)
      let name = withUnsafeBytes(of: &scratch) { Self.headerField(named: $0.baseAddress!, length: length) }
      beginFieldValue(name)
      phase = .headerValue
      return .more

    case .headerLineStart:
      if byte == HTTPByteClass.lf { return .headEnded }
      if HTTPByteClass.isToken(byte) {
        scratchLength = 0
        withUnsafeBytes(of: byte) { appendScratch($0) }
        phase = .headerName
        return .more
      }
      // Obsolete line folding continues the previous value; its text is ignored (RFC 9112 §5.2).
      guard HTTPByteClass.isWhitespace(byte) else { return .invalid }
      phase = .headerIgnoredLine
      return .more

    case .headerIgnoredLine:
      if byte == HTTPByteClass.lf {
        phase = .headerLineStart
        return .more
      }
      return HTTPByteClass.isFieldText(byte) ? .more : .invalid

    default:
      return .invalid
    }
  }

  // MARK: Names and tokens

  /// Appends token bytes to ``scratch``, or marks it too long to match anything.
  @inline(__always)
  mutating func appendScratch(_ bytes: UnsafeRawBufferPointer) {
    let length = Int(scratchLength)
    guard length &+ bytes.count <= Int(Self.scratchCapacity) else {
      scratchLength = Self.scratchCapacity &+ 1
      return
    }
    withUnsafeMutableBytes(of: &scratch) { storage in
      UnsafeMutableRawBufferPointer(rebasing: storage[length...]).copyMemory(from: bytes)
    }
    scratchLength = UInt8(truncatingIfNeeded: length &+ bytes.count)
  }

  /// Whether ``scratch`` holds exactly `literal` (lower-case ASCII), in any case.
  mutating func scratchEquals(_ literal: StaticString) -> Bool {
    Int(scratchLength) == literal.utf8CodeUnitCount
      && withUnsafeBytes(of: &scratch) { HTTPByteClass.tokenEquals($0.baseAddress!, literal) }
  }

  /// The header with the `length` token bytes at `name`; only the length and, for the few lengths that
  /// matter, the bytes are looked at.
  @inline(__always)
  static func headerField(named name: UnsafeRawPointer, length: Int) -> HeaderField {
    switch length {
    case 4: HTTPByteClass.tokenEquals(name, "host") ? .host : .other
    case 10: HTTPByteClass.tokenEquals(name, "connection") ? .connection : .other
    case 14: HTTPByteClass.tokenEquals(name, "content-length") ? .contentLength : .other
    case 17: HTTPByteClass.tokenEquals(name, "transfer-encoding") ? .transferEncoding : .other
    default: .other
    }
  }

  /// Prepares to parse the value of `field`. The first `Host` header wins.
  @inline(__always)
  mutating func beginFieldValue(_ field: HeaderField) {
    self.field = field == .host && (head.hostLength > 0 || head.hostTruncated) ? .other : field
    // The rest is the state of a value that is parsed; the value of any other header reads none of it.
    guard self.field != .other else { return }
    scratchLength = 0
    number = 0
    matchIndex = 0
    valueStarted = false
    inParameters = false
    digitsEnded = false
  }

  /// Bytes of a field value, all field text; `false` when one makes the message unframeable.
  mutating func valueBytes(_ bytes: UnsafeRawBufferPointer) -> Bool {
    switch field {
    case .other: return true
    case .contentLength: return bytes.allSatisfy { contentLengthByte($0) }
    case .transferEncoding, .connection: listTokens(bytes)
    case .host: appendHost(bytes)
    }
    return true
  }

  /// Finishes the value at its line end; `false` when it makes the message unframeable.
  mutating func endFieldValue() -> Bool {
    switch field {
    case .other:
      return true
    case .contentLength:
      return commitContentLength()
    case .transferEncoding, .connection:
      commitListToken()
      return true
    case .host:
      head.hostLength = UInt16(truncatingIfNeeded: number)
      return true
    }
  }

  // MARK: Content-Length

  /// One byte of a `Content-Length` value: digits, optional whitespace, and (RFC 9110 §8.6) a list of
  /// identical values.
  @inline(__always)
  mutating func contentLengthByte(_ byte: UInt8) -> Bool {
    if let digit = HTTPByteClass.decimal(byte) {
      guard !digitsEnded, number <= (Self.maxContentLength &- digit) / 10 else { return false }
      number = number &* 10 &+ digit
      matchIndex = 1
      return true
    }
    if HTTPByteClass.isWhitespace(byte) {
      digitsEnded = matchIndex > 0
      return true
    }
    guard byte == HTTPByteClass.comma else { return false }  // a sign, a letter, …
    return commitContentLength()
  }

  /// Records one `Content-Length` element; `false` when it is empty or disagrees with an earlier one.
  mutating func commitContentLength() -> Bool {
    guard matchIndex > 0 else { return false }
    if head.hasContentLength && head.contentLengthValue != number { return false }
    head.hasContentLength = true
    head.contentLengthValue = number
    number = 0
    matchIndex = 0
    digitsEnded = false
    return true
  }

  // MARK: Transfer-Encoding and Connection

  /// Bytes of a comma-separated list of tokens with optional `;` parameters (transfer codings,
  /// connection options). Lenient: bytes that fit no token are skipped.
  @inline(__always)
  mutating func listTokens(_ bytes: UnsafeRawBufferPointer) {
    var index = 0
    while index < bytes.count {
      let byte = bytes[index]
      if byte == HTTPByteClass.comma {
        commitListToken()
        inParameters = false
      } else if !inParameters {
        if byte == HTTPByteClass.semicolon {
          inParameters = true
        } else if HTTPByteClass.isToken(byte) {
          var end = index &+ 1
          while end < bytes.count, HTTPByteClass.isToken(bytes[end]) { end &+= 1 }
          appendScratch(UnsafeRawBufferPointer(rebasing: bytes[index..<end]))
          index = end
          continue
        }
      }
      index &+= 1
    }
  }

  /// Records the token in ``scratch``: for `Transfer-Encoding`, whether the last coding is `chunked`;
  /// for `Connection`, the `close`, `keep-alive` and `upgrade` options.
  mutating func commitListToken() {
    guard scratchLength > 0 else { return }
    if field == .transferEncoding {
      head.hasTransferEncoding = true
      head.isChunked = scratchEquals("chunked")
    } else if scratchEquals("close") {
      head.connectionClose = true
    } else if scratchEquals("keep-alive") {
      head.connectionKeepAlive = true
    } else if scratchEquals("upgrade") {
      head.connectionUpgrade = true
    }
    scratchLength = 0
  }

  // MARK: Host

  /// Bytes of the `Host` value: leading whitespace skipped, truncated at the capacity. ``number`` is the
  /// length up to the last byte that is not whitespace: trailing whitespace is trimmed at the line end.
  @inline(__always)
  mutating func appendHost(_ bytes: UnsafeRawBufferPointer) {
    var first = 0
    if !valueStarted {
      while first < bytes.count, HTTPByteClass.isWhitespace(bytes[first]) { first &+= 1 }
      if first == bytes.count { return }
      valueStarted = true
    }
    let start = Int(head.hostLength)
    let copied = head.appendHost(UnsafeRawBufferPointer(rebasing: bytes[first...]))
    var end = first &+ copied
    while end > first, HTTPByteClass.isWhitespace(bytes[end &- 1]) { end &-= 1 }
    if end > first { number = UInt64(start &+ end &- first) }
  }
}
