extension HTTPStreamParser {
  /// The largest chunk size accepted (2⁶⁰ - 1: fifteen significant hexadecimal digits).
  static var maxChunkSizeBits: UInt64 { 60 }

  /// Starts a chunk-size line; it and (after the last chunk) the trailer section get a fresh
  /// ``maxHeadBytes`` budget.
  @inline(__always)
  mutating func beginChunkSizeLine() {
    phase = .chunkSize
    number = 0
    matchIndex = 0
    scanBytes = 0
  }

  /// Scans one byte of the chunked coding's framing (RFC 9112 §7.1): chunk-size lines with optional
  /// extensions, the CRLF after each chunk's data, and the trailer section. Chunk data itself is
  /// consumed in bulk by ``feed(_:as:onEvent:)``.
  @inline(__always)
  mutating func scanChunked(_ byte: UInt8) -> ScanOutcome {
    switch phase {
    case .chunkSize:
      if let digit = HTTPByteClass.hexadecimal(byte) {
        guard number >> (Self.maxChunkSizeBits &- 4) == 0 else { return .invalid }
        number = number << 4 | digit
        matchIndex = 1
        return .more
      }
      guard matchIndex > 0 else { return .invalid }  // no digits: not a chunk size
      phase = .chunkSizeEnd
      return scanChunkSizeEnd(byte)

    case .chunkSizeEnd:
      return scanChunkSizeEnd(byte)

    case .chunkExtension:
      if byte == HTTPByteClass.lf { return endChunkSizeLine() }
      return HTTPByteClass.isFieldText(byte) ? .more : .invalid

    case .chunkDataEnd:
      guard byte == HTTPByteClass.lf else { return .invalid }  // data longer than its size
      beginChunkSizeLine()
      return .more

    case .trailerLineStart:
      if byte == HTTPByteClass.lf { return .messageEnded }
      guard HTTPByteClass.isToken(byte) || HTTPByteClass.isWhitespace(byte) else { return .invalid }
      phase = .trailerLine
      return .more

    case .trailerLine:
      if byte == HTTPByteClass.lf {
        phase = .trailerLineStart
        return .more
      }
      return HTTPByteClass.isFieldText(byte) ? .more : .invalid

    default:
      return .invalid
    }
  }

  /// After the digits of a chunk size: optional whitespace, then an extension or the line end.
  @inline(__always)
  mutating func scanChunkSizeEnd(_ byte: UInt8) -> ScanOutcome {
    if byte == HTTPByteClass.lf { return endChunkSizeLine() }
    if HTTPByteClass.isWhitespace(byte) { return .more }
    guard byte == HTTPByteClass.semicolon else { return .invalid }
    phase = .chunkExtension
    return .more
  }

  /// A chunk-size line ended: its data follows, or the trailer section after the last chunk.
  @inline(__always)
  mutating func endChunkSizeLine() -> ScanOutcome {
    if number == 0 {
      phase = .trailerLineStart
    } else {
      remaining = number
      phase = .chunkData
    }
    return .more
  }
}
