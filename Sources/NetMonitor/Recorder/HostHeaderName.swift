import CNetMonitor

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
    guard let bytes = host.baseAddress else { return nil }
    // The rule is C's, shared with the injected library's light clients (cnm_host_header_name.h).
    let length = cnm_host_header_name_length(
      bytes.assumingMemoryBound(to: UInt8.self), host.count, targetIsPath, peerPort, isTLS)
    return length == 0 ? nil : UnsafeRawBufferPointer(rebasing: host[..<length])
  }
}
