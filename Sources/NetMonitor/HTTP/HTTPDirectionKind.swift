/// What one direction of a connection carries: the requests (a client's writes, a server's reads) or the
/// responses (a client's reads, a server's writes).
///
/// ``HTTPStreamParser`` takes it on every call instead of storing it, so that a parser made of zero bytes
/// is ready for either direction.
public enum HTTPDirectionKind: Sendable {
  /// Request lines (`GET /path HTTP/1.1`), their headers and bodies.
  case requests
  /// Status lines (`HTTP/1.1 200 OK`), their headers and bodies.
  case responses
}
