extension HTTPStreamParser {
  /// Where the parser is in the stream. The first case is the zero state.
  enum Phase: Sendable {
    /// Between messages (or nothing seen yet): blank lines are skipped, any other byte starts a message.
    case idle
    /// Request line: the method, up to its single SP.
    case requestMethod
    /// Request line: the target, up to its single SP.
    case requestTarget
    /// Request line: `HTTP/1.x`, then the line end.
    case requestVersion
    /// Status line: `HTTP/1.x`, then SP.
    case statusVersion
    /// Status line: three digits.
    case statusCode
    /// Status line: the reason phrase, up to the line end.
    case statusReason
    /// The first byte of a header line, or the empty line ending the head.
    case headerLineStart
    /// A header name, up to `:`.
    case headerName
    /// A header value, up to the line end.
    case headerValue
    /// An obsolete line folding (a line starting with whitespace), ignored.
    case headerIgnoredLine
    /// A body of known length: ``remaining`` bytes, consumed in bulk.
    case contentBody
    /// A chunk-size line: hexadecimal digits.
    case chunkSize
    /// A chunk-size line after its digits: whitespace, `;` or the line end.
    case chunkSizeEnd
    /// A chunk extension, up to the line end.
    case chunkExtension
    /// Chunk data: ``remaining`` bytes, consumed in bulk.
    case chunkData
    /// The CRLF after chunk data.
    case chunkDataEnd
    /// The first byte of a trailer line, or the empty line ending the message.
    case trailerLineStart
    /// A trailer line, ignored up to its end.
    case trailerLine
    /// A close-delimited response body: everything until ``finish(onEvent:)``.
    case untilClose
    /// Another protocol after 101 or CONNECT: everything ignored.
    case tunnel
    /// Not HTTP/1.x, or malformed: everything ignored.
    case gaveUp
  }

  /// The header whose value is being parsed; all others are skipped.
  enum HeaderField: Sendable {
    case other
    case contentLength
    case transferEncoding
    case connection
    case host
  }
}
