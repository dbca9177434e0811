/// Receives the events of ``HTTPStreamParser/feed(_:as:onEvent:)`` and
/// ``HTTPStreamParser/finish(onEvent:)``, each with the head of the message it belongs to: not yet
/// this message's at ``HTTPStreamEvent/messageStarted`` (empty, or the previous message's when the
/// head repeats it byte for byte), complete from ``HTTPStreamEvent/headComplete`` on (so
/// ``HTTPStreamEvent/messageComplete(totalBytes:)`` comes with its status, method and target). The head
/// is the parser's own, in place: the pointer is valid during the call only; copy the head if it must
/// outlive it.
public typealias HTTPStreamEventHandler = (HTTPStreamEvent, UnsafePointer<HTTPHead>) -> Void

/// A framing event found by ``HTTPStreamParser`` in the bytes of one direction of a connection.
///
/// Small plain data: creating or passing one allocates and copies nothing; the head travels beside it
/// (``HTTPStreamEventHandler``).
public enum HTTPStreamEvent: Sendable {
  /// The first byte of a request or response arrived (blank lines between messages are skipped). On the
  /// response side, this is the moment for time-to-first-byte.
  case messageStarted
  /// The request line or status line and all header lines have arrived; the head passed with this
  /// event is complete, and ``HTTPHead/bodyFraming`` says how the body will end.
  case headComplete
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
