/// How the body of a message is delimited, decided when its head is complete (RFC 9112 §6.3).
public enum HTTPBodyFraming: Sendable {
  /// No body: a request without `Content-Length` or `Transfer-Encoding`, a 1xx, 204 or 304 response, a
  /// response to `HEAD`, or a 2xx response to `CONNECT`.
  case none
  /// Exactly ``HTTPHead/contentLength`` bytes.
  case contentLength
  /// `Transfer-Encoding: chunked`: chunks up to a zero-size chunk and the trailer section.
  case chunked
  /// A response with neither: the body runs until the connection closes
  /// (``HTTPStreamParser/finish(onEvent:)``).
  case untilClose
}
