/// A framing event found by ``HTTPStreamParser`` in the bytes of one direction of a connection.
///
/// Creating or passing one allocates nothing: every payload is plain data.
public enum HTTPStreamEvent: Sendable {
  /// The first byte of a request or response arrived (blank lines between messages are skipped). On the
  /// response side, this is the moment for time-to-first-byte.
  case messageStarted
  /// The request line or status line and all header lines have arrived.
  case headComplete(HTTPHead)
  /// The message ended; `totalBytes` counts its head and body bytes as they appeared on the stream.
  case messageComplete(totalBytes: UInt64)
  /// The stream ended (``HTTPStreamParser/finish(onEvent:)``) inside a message that needed more bytes;
  /// `totalBytes` counts what arrived of it.
  case messageIncomplete(totalBytes: UInt64)
  /// After a 101 (Switching Protocols) response, or a 2xx response to `CONNECT`, the connection carries
  /// another protocol; the parser ignores the rest of the stream. The caller should call
  /// ``HTTPStreamParser/enterTunnel()`` on the other direction's parser.
  case switchedProtocols
  /// The stream is not HTTP/1.x (for example TLS, HTTP/2 or a binary protocol), or is malformed beyond
  /// recovery. Reported once; the parser ignores the rest of the stream.
  case gaveUp
}
