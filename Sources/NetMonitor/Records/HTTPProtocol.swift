/// The HTTP version an exchange spoke (`protocol`), as ALPN names them.
public enum HTTPProtocol: String, Sendable, Hashable, CaseIterable {
  case http10 = "http/1.0"
  case http11 = "http/1.1"
  /// HTTP/2: the record is one stream of the connection (`stream_id`).
  case h2
}
