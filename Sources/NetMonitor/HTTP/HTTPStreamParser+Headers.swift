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
      switch field {
      case .other: return .more
      case .contentLength: return contentLengthByte(byte) ? .more : .invalid
      case .transferEncoding, .connection: listTokenByte(byte)
      case .host: hostByte(byte)
      }
      return .more

    case .headerName:
      if HTTPByteClass.isToken(byte) {
        appendScratch(HTTPByteClass.lowercased(byte))
        return .more
      }
      // Whitespace before the colon is forbidden (RFC 9112 §5.1), and so is a line without one.
      guard byte == HTTPByteClass.colon else { return .invalid }
      beginFieldValue()
      phase = .headerValue
      return .more

    case .headerLineStart:
      if byte == HTTPByteClass.lf { return .headEnded }
      if HTTPByteClass.isToken(byte) {
        scratchLength = 0
        appendScratch(HTTPByteClass.lowercased(byte))
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

  /// Appends a lower-cased byte to ``scratch``, or marks it too long to match anything.
  @inline(__always)
  mutating func appendScratch(_ byte: UInt8) {
    if scratchLength < Self.scratchCapacity {
      scratch[Int(scratchLength)] = byte
      scratchLength &+= 1
    } else {
      scratchLength = Self.scratchCapacity &+ 1
    }
  }

  /// Whether ``scratch`` holds exactly `literal` (lower-case ASCII).
  func scratchEquals(_ literal: StaticString) -> Bool {
    guard Int(scratchLength) == literal.utf8CodeUnitCount else { return false }
    let expected = literal.utf8Start
    for offset in 0..<Int(scratchLength) where scratch[offset] != expected[offset] {
      return false
    }
    return true
  }

  /// Identifies the header named in ``scratch`` and prepares to parse its value.
  mutating func beginFieldValue() {
    switch scratchLength {
    case 4: field = scratchEquals("host") && head.hostLength == 0 && !head.hostTruncated ? .host : .other
    case 10: field = scratchEquals("connection") ? .connection : .other
    case 14: field = scratchEquals("content-length") ? .contentLength : .other
    case 17: field = scratchEquals("transfer-encoding") ? .transferEncoding : .other
    default: field = .other
    }
    scratchLength = 0
    number = 0
    matchIndex = 0
    valueStarted = false
    inParameters = false
    digitsEnded = false
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

  /// One byte of a comma-separated list of tokens with optional `;` parameters (transfer codings,
  /// connection options). Lenient: bytes that fit no token are skipped.
  @inline(__always)
  mutating func listTokenByte(_ byte: UInt8) {
    if byte == HTTPByteClass.comma {
      commitListToken()
      inParameters = false
    } else if inParameters {
      return
    } else if byte == HTTPByteClass.semicolon {
      inParameters = true
    } else if HTTPByteClass.isToken(byte) {
      appendScratch(HTTPByteClass.lowercased(byte))
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

  /// One byte of the `Host` value: leading whitespace skipped, trailing whitespace trimmed at the end
  /// (``number`` is the length up to the last other byte), truncated at the capacity.
  @inline(__always)
  mutating func hostByte(_ byte: UInt8) {
    let isWhitespace = HTTPByteClass.isWhitespace(byte)
    if !valueStarted {
      if isWhitespace { return }
      valueStarted = true
    }
    guard Int(head.hostLength) < HTTPHead.hostCapacity else {
      head.hostTruncated = true
      return
    }
    head.host[Int(head.hostLength)] = byte
    head.hostLength &+= 1
    if !isWhitespace { number = UInt64(head.hostLength) }
  }
}
