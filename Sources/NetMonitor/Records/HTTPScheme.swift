/// Whether an HTTP exchange went over TLS (`scheme`).
public enum HTTPScheme: String, Sendable, Hashable, CaseIterable {
  /// Plaintext HTTP/1.x on the socket.
  case http
  /// HTTP/1.x inside TLS, seen through the TLS library's plaintext calls.
  case https
}
