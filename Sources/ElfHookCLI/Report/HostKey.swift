import NetMonitor

/// A server a process talked to: its name or address (`server.address`) and port. Names are
/// lowercased, as DNS and the `Host` header compare them.
struct HostKey: Hashable, Comparable, CustomStringConvertible {
  var address: String
  /// `nil` for a Unix-domain socket, whose address is its path.
  var port: UInt16?

  /// The host an HTTP request was addressed to: its `Host` header, with the scheme's default port
  /// when the header names none.
  init(_ http: HTTPRecord) {
    let defaultPort: UInt16 = http.scheme == .https ? 443 : 80
    guard let header = http.host, !header.isEmpty else {
      self.init(address: "(no Host header)", port: defaultPort)
      return
    }
    let (name, port) = Self.split(header[...])
    self.init(address: name.lowercased(), port: port ?? defaultPort)
  }

  /// The server a connection went to: the name it was resolved from, else its peer address.
  /// `nil` for a connection the process accepted: its peer is a client on an ephemeral port, not
  /// a server, and one row per client port would drown the table.
  init?(_ connection: ConnectionRecord) {
    guard connection.role == .client else { return nil }
    let address = connection.host?.lowercased() ?? connection.peerAddress ?? "(unknown peer)"
    self.init(address: address, port: connection.peerPort)
  }

  init(address: String, port: UInt16?) {
    self.address = address
    self.port = port
  }

  /// `name:port`, with an IPv6 address in brackets (`[::1]:8080`).
  var description: String {
    guard let port else { return address }
    return (address.contains(":") ? "[\(address)]" : address) + ":\(port)"
  }

  static func < (left: HostKey, right: HostKey) -> Bool {
    (left.address, left.port ?? 0) < (right.address, right.port ?? 0)
  }

  /// Splits `name:port`, `[v6]:port`, `[v6]` or `name`; a port that is not a number stays part of
  /// the name.
  private static func split(_ header: Substring) -> (Substring, UInt16?) {
    if header.first == "[", let close = header.firstIndex(of: "]") {
      let name = header[header.index(after: header.startIndex)..<close]
      let rest = header[header.index(after: close)...]
      return (name, rest.first == ":" ? UInt16(rest.dropFirst()) : nil)
    }
    if let colon = header.lastIndex(of: ":"), header.firstIndex(of: ":") == colon,
      let port = UInt16(header[header.index(after: colon)...])
    {
      return (header[..<colon], port)
    }
    return (header, nil)
  }
}
