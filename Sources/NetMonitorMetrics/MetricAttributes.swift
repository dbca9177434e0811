import NetMonitor

/// The values of the dimensions: each rule of the semantic conventions ``MetricMapping`` follows,
/// as one small function. The spans of `elfhook export --otlp` follow the same rules for the
/// attributes they share (the method, `error.type`, the `Host` header's parts).
public enum MetricAttributes {
  /// The methods the conventions name; any other becomes `_OTHER`, so a client sending made-up
  /// methods cannot create series.
  static let knownMethods: Set<String> = [
    "GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE", "PATCH",
  ]

  /// `http.request.method`.
  public static func method(_ method: String) -> String {
    knownMethods.contains(method) ? method : "_OTHER"
  }

  /// `error.type` of an exchange: for a gRPC call that failed, its status as text (a client's
  /// every failure; a server's own: UNKNOWN, DEADLINE_EXCEEDED, UNIMPLEMENTED, INTERNAL,
  /// UNAVAILABLE, DATA_LOSS); else the HTTP status as text when it is an error for `role` (≥ 400
  /// seen by a client, ≥ 500 by a server), `no_response` when no response came,
  /// `incomplete_response` when it was cut short; `nil` on success.
  public static func httpErrorType(of record: HTTPRecord, role: ConnectionRole) -> String? {
    if let call = GRPCCall(record), call.status != 0 {
      if role == .client || grpcServerErrors.contains(call.status) { return String(call.status) }
    }
    guard let status = record.status else { return "no_response" }
    if status >= (role == .server ? 500 : 400) { return String(status) }
    return record.responseComplete == false ? "incomplete_response" : nil
  }

  /// The gRPC statuses that are a server's failure (the others are the caller's).
  static let grpcServerErrors: Set<Int> = [2, 4, 12, 13, 14, 15]

  /// `server.address` and `server.port` of a client exchange: the `Host` header's, the port
  /// defaulting to the scheme's; without a `Host` header, the peer's address and port.
  static func server(of record: HTTPRecord) -> (address: String?, port: UInt16) {
    guard let host = record.host, !host.isEmpty else {
      return (record.peerAddress, record.peerPort ?? defaultPort(record.scheme))
    }
    let (address, port) = hostAndPort(host)
    return (address.isEmpty ? nil : address, port ?? defaultPort(record.scheme))
  }

  /// A `Host` header split into host and port: `example.org:8080`, `[::1]:8080`, `[::1]`,
  /// `example.org`; a bracketed IPv6 literal loses its brackets, as `server.address` wants. The host
  /// is lowercased (names are case-insensitive: one series, not two).
  public static func hostAndPort(_ header: String) -> (host: String, port: UInt16?) {
    var host = Substring(header)
    var port: UInt16?
    if host.hasPrefix("["), let close = host.firstIndex(of: "]") {
      let after = host[host.index(after: close)...]
      if after.hasPrefix(":") { port = UInt16(after.dropFirst()) }
      host = host[host.index(after: host.startIndex)..<close]
    } else if let colon = host.lastIndex(of: ":"), host.firstIndex(of: ":") == colon {
      port = UInt16(host[host.index(after: colon)...])
      host = host[..<colon]
    }
    return (host.lowercased(), port)
  }

  /// The port a scheme implies when the `Host` header names none.
  static func defaultPort(_ scheme: HTTPScheme) -> UInt16 {
    scheme == .https ? 443 : 80
  }

  /// `tls.protocol.version`: OpenSSL's `TLSv1.3` becomes `1.3`, `TLSv1` `1.0`, `SSLv3` `3`; other
  /// spellings pass unchanged.
  static func tlsVersion(_ version: String) -> String {
    for prefix in ["TLSv", "SSLv"] where version.hasPrefix(prefix) {
      let number = version.dropFirst(prefix.count)
      return number == "1" ? "1.0" : String(number)
    }
    return version
  }

  /// Whether a connection's failure happened in the TLS handshake rather than later.
  static func isHandshakeCall(_ call: String) -> Bool {
    call == "SSL_do_handshake" || call == "SSL_connect" || call == "SSL_accept"
  }

  /// Milliseconds as whole nanoseconds for a `Timer`; `nil` for a negative or non-finite value
  /// (a clock step), which is better dropped than recorded as a wrong duration.
  static func nanoseconds(milliseconds: Double) -> Int64? {
    guard milliseconds.isFinite, milliseconds >= 0 else { return nil }
    let nanoseconds = (milliseconds * 1_000_000).rounded()
    return nanoseconds < Double(Int64.max) ? Int64(nanoseconds) : Int64.max
  }
}
