/// The name a client connection goes by when no lookup named it and no TLS server name did: a
/// client that resolves names itself (curl's `localhost`, a hosts file of its own) still says
/// which server it meant in its first request's `Host` header. The header names this connection's server only when its port (or the scheme's
/// default) is the peer's port and the target is a path: a forward proxy's requests carry their
/// origin's Host (and an absolute or CONNECT target), not the proxy's.
enum HostHeaderName {
  /// The name part of `head`'s Host header (brackets kept around an IPv6 literal), when it names
  /// the server at `peerPort`; nil otherwise.
  static func serverName(of head: UnsafePointer<HTTPHead>, peerPort: UInt16, isTLS: Bool)
    -> UnsafeRawBufferPointer?
  {
    serverName(host: head.hostBytes, targetIsPath: head.targetBytes.first == UInt8(ascii: "/"), peerPort: peerPort,
               isTLS: isTLS)
  }

  /// The same from the `Host` value (or HTTP/2's `:authority`) and whether the target is a path.
  static func serverName(host: UnsafeRawBufferPointer, targetIsPath: Bool, peerPort: UInt16, isTLS: Bool)
    -> UnsafeRawBufferPointer?
  {
    guard targetIsPath, !host.isEmpty else { return nil }
    // The port follows the last colon after an IPv6 literal's closing bracket, if any.
    let literalEnd = host.lastIndex(of: UInt8(ascii: "]")).map { $0 + 1 } ?? 0
    let colon = host[literalEnd...].lastIndex(of: UInt8(ascii: ":"))
    let nameEnd = colon ?? host.count
    guard nameEnd > 0 else { return nil }
    let port: UInt16?
    if let colon {
      port = decimal(UnsafeRawBufferPointer(rebasing: host[(colon + 1)...]))
    } else {
      port = isTLS ? 443 : 80
    }
    guard port == peerPort else { return nil }
    return UnsafeRawBufferPointer(rebasing: host[..<nameEnd])
  }

  /// The port `digits` spell; nil when they are not one.
  private static func decimal(_ digits: UnsafeRawBufferPointer) -> UInt16? {
    guard !digits.isEmpty, digits.count <= 5 else { return nil }
    var value: UInt32 = 0
    for digit in digits {
      guard digit >= UInt8(ascii: "0"), digit <= UInt8(ascii: "9") else { return nil }
      value = value * 10 + UInt32(digit - UInt8(ascii: "0"))
    }
    return value <= UInt32(UInt16.max) ? UInt16(value) : nil
  }
}
