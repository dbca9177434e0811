/// One socket connection, from open to close: where it went, how long each phase took, how many
/// bytes crossed it, and how it ended.
///
/// JSON keys, in this order: `kind` (`"connection"`), `pid`, `process`, `start_unix_ns`,
/// `duration_ms`, `id`, `role`, `transport`, `host`, `peer_address`, `peer_port`, `dns_ms`,
/// `connect_ms`, `tls_ms`, `tls_version`, `tls_alpn` (beyond ARCHITECTURE.md's list),
/// `bytes_sent`, `bytes_received`, `tls_bytes_sent`, `tls_bytes_received`, `http_exchanges`,
/// `http_error` (beyond ARCHITECTURE.md's list), `error`. Optional properties are written as `null` when they do not apply or were not
/// observed — never invented.
public struct ConnectionRecord: Sendable, Hashable {
  /// The id of the process (`pid`).
  public var pid: Int32
  /// The short name of the process (`process`).
  public var process: String
  /// When the connection was opened (the `connect` or `accept` call), in nanoseconds since the
  /// Unix epoch (`start_unix_ns`).
  public var startUnixNs: UInt64
  /// From open to close, in milliseconds (`duration_ms`).
  public var durationMs: Double
  /// The connection's id, unique in the process; `HTTPRecord.connectionId` refers to it (`id`).
  public var id: UInt64
  /// Whether the process opened or accepted the connection (`role`).
  public var role: ConnectionRole
  /// TCP, UDP or a Unix-domain socket (`transport`).
  public var transport: ConnectionTransport
  /// The name the peer address was resolved from, when a `getaddrinfo` result matched it (`host`).
  public var host: String?
  /// The peer's numeric address (`192.0.2.1`, `2001:db8::1`), or the socket path for
  /// `transport == .unix` (`peer_address`).
  public var peerAddress: String?
  /// The peer's port; `nil` for Unix-domain sockets (`peer_port`).
  public var peerPort: UInt16?
  /// The `getaddrinfo` time that preceded the connection, when `host` is known (`dns_ms`).
  public var dnsMs: Double?
  /// From `connect` to the connection being established (`connect_ms`); `nil` for `server`.
  public var connectMs: Double?
  /// The TLS handshake, or `nil` without TLS (`tls_ms`).
  public var tlsMs: Double?
  /// The negotiated TLS version as the TLS library names it (`"TLSv1.3"`), or `nil`
  /// (`tls_version`).
  public var tlsVersion: String?
  /// The application protocol the TLS handshake chose by ALPN (`"h2"`, `"http/1.1"`), or `nil`
  /// (`tls_alpn`).
  public var tlsALPN: String?
  /// Bytes written to the socket, TLS records included (`bytes_sent`).
  public var bytesSent: UInt64
  /// Bytes read from the socket, TLS records included (`bytes_received`).
  public var bytesReceived: UInt64
  /// Plaintext bytes written through TLS, or `nil` without TLS (`tls_bytes_sent`).
  public var tlsBytesSent: UInt64?
  /// Plaintext bytes read through TLS, or `nil` without TLS (`tls_bytes_received`).
  public var tlsBytesReceived: UInt64?
  /// HTTP/1.x exchanges and HTTP/2 streams recorded on the connection; `nil` when the bytes
  /// could not be seen (TLS through a library that is not hooked) (`http_exchanges`).
  public var httpExchanges: Int?
  /// Why elfhook stopped reading HTTP on the connection part way (`"HTTP/2: bad HPACK index"`):
  /// the streams it could not finish reading are recorded without what it missed. `nil` when it
  /// read to the end (`http_error`).
  public var httpError: String?
  /// The first failure on the connection (`connect`, `SSL_do_handshake`, `read`…), or `nil`
  /// (`error`).
  public var error: RecordedError?

  /// Creates a record of one connection.
  public init(
    pid: Int32, process: String, startUnixNs: UInt64, durationMs: Double,
    id: UInt64, role: ConnectionRole, transport: ConnectionTransport,
    host: String? = nil, peerAddress: String?, peerPort: UInt16?,
    dnsMs: Double? = nil, connectMs: Double? = nil, tlsMs: Double? = nil, tlsVersion: String? = nil,
    tlsALPN: String? = nil, bytesSent: UInt64, bytesReceived: UInt64,
    tlsBytesSent: UInt64? = nil, tlsBytesReceived: UInt64? = nil,
    httpExchanges: Int?, httpError: String? = nil, error: RecordedError? = nil
  ) {
    self.pid = pid
    self.process = process
    self.startUnixNs = startUnixNs
    self.durationMs = durationMs
    self.id = id
    self.role = role
    self.transport = transport
    self.host = host
    self.peerAddress = peerAddress
    self.peerPort = peerPort
    self.dnsMs = dnsMs
    self.connectMs = connectMs
    self.tlsMs = tlsMs
    self.tlsVersion = tlsVersion
    self.tlsALPN = tlsALPN
    self.bytesSent = bytesSent
    self.bytesReceived = bytesReceived
    self.tlsBytesSent = tlsBytesSent
    self.tlsBytesReceived = tlsBytesReceived
    self.httpExchanges = httpExchanges
    self.httpError = httpError
    self.error = error
  }
}
