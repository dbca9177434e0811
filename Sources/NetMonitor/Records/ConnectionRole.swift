/// Which side of a connection the monitored process is (`role`).
public enum ConnectionRole: String, Sendable, Hashable, CaseIterable {
  /// The process opened the connection (`connect`).
  case client
  /// The process accepted the connection (`accept`).
  case server
}

/// The transport of a connection (`transport`).
public enum ConnectionTransport: String, Sendable, Hashable, CaseIterable {
  /// A stream socket over IPv4 or IPv6.
  case tcp
  /// A datagram socket over IPv4 or IPv6 (a "connection" is the socket's life after `connect`).
  case udp
  /// A Unix-domain socket; `peer_address` is its path (or `@name` for the abstract namespace).
  case unix
}
