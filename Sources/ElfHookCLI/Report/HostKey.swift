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
    let (name, port) = Self.split(header)
    self.init(address: Self.lowercasedASCII(name), port: port ?? defaultPort)
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
    self.address = Self.unmapped(address)
    self.port = port
  }

  /// An IPv4-mapped IPv6 address (`::ffff:10.0.0.1`: how an IPv6 socket, Java's for one, sees an
  /// IPv4 peer) is its IPv4 address, so that the server is one row whichever way it was reached.
  private static func unmapped(_ address: String) -> String {
    let prefix = "::ffff:".utf8
    let bytes = address.utf8
    guard bytes.first == UInt8(ascii: ":"), bytes.count > prefix.count,
      zip(bytes, prefix).allSatisfy({ $0 | 0x20 == $1 | 0x20 })
    else { return address }
    let rest = bytes.dropFirst(prefix.count)
    guard rest.contains(UInt8(ascii: ".")),
      rest.allSatisfy({ $0 == UInt8(ascii: ".") || ($0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9")) })
    else { return address }
    return String(decoding: rest, as: UTF8.self)
  }

  /// `name:port`, with an IPv6 address in brackets (`[::1]:8080`).
  var description: String {
    guard let port else { return address }
    return (address.utf8.contains(UInt8(ascii: ":")) ? "[\(address)]" : address) + ":\(port)"
  }

  static func < (left: HostKey, right: HostKey) -> Bool {
    (left.address, left.port ?? 0) < (right.address, right.port ?? 0)
  }

  /// Splits `name:port`, `[v6]:port`, `[v6]` or `name`; a port that is not a number stays part of
  /// the name. Works on UTF-8 bytes in place: it runs once per request record, for millions of them.
  private static func split(_ header: String) -> (String, UInt16?) {
    let parts =
      header.utf8.withContiguousStorageIfAvailable { split($0) }
      ?? Array(header.utf8).withUnsafeBufferPointer { split($0) }
    return parts ?? (header, nil)
  }

  /// `nil` when the whole header is the name.
  private static func split(_ bytes: UnsafeBufferPointer<UInt8>) -> (String, UInt16?)? {
    let colon = UInt8(ascii: ":")
    if bytes.first == UInt8(ascii: "["), let close = bytes.firstIndex(of: UInt8(ascii: "]")) {
      let name = String(decoding: UnsafeBufferPointer(rebasing: bytes[1..<close]), as: UTF8.self)
      let rest = bytes[(close + 1)...]
      return (name, rest.first == colon ? port(rest.dropFirst()) : nil)
    }
    if let index = bytes.lastIndex(of: colon), bytes.firstIndex(of: colon) == index,
      let port = port(bytes[(index + 1)...])
    {
      return (String(decoding: UnsafeBufferPointer(rebasing: bytes[..<index]), as: UTF8.self), port)
    }
    return nil
  }

  /// Decimal digits only (no sign, no spaces), at most 65535.
  private static func port(_ digits: Slice<UnsafeBufferPointer<UInt8>>) -> UInt16? {
    guard !digits.isEmpty, digits.count <= 5 else { return nil }
    var value = 0
    for digit in digits {
      guard digit >= UInt8(ascii: "0") && digit <= UInt8(ascii: "9") else { return nil }
      value = value * 10 + Int(digit - UInt8(ascii: "0"))
    }
    return value <= Int(UInt16.max) ? UInt16(value) : nil
  }

  /// Host names compare case-insensitively; most are lower case already, and then the string is
  /// kept as it is.
  private static func lowercasedASCII(_ name: String) -> String {
    name.utf8.contains { $0 >= UInt8(ascii: "A") && $0 <= UInt8(ascii: "Z") } ? name.lowercased() : name
  }
}
