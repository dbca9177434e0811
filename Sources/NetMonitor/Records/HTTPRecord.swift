/// One HTTP/1.x request and its response, or one HTTP/2 stream.
///
/// JSON keys, in this order: `kind` (`"http"`), `pid`, `process`, `start_unix_ns`, `duration_ms`,
/// `connection_id`, `scheme`, `method`, `host`, `target`, `status`, `ttfb_ms`, `request_bytes`,
/// `response_bytes`, `response_complete`, `reused_connection`, `protocol`, `stream_id`, `grpc_status`,
/// `grpc_message`, then what the exchange's connection knew when the exchange
/// completed: `role`, `peer_address`, `peer_port`, and — on the connection's first exchange only,
/// `null` on a reused one — its setup phases `dns_ms`, `connect_ms`, `tls_ms`; then `tls_version`
/// (the keys and order a `connection` record uses for the same fields).
///
/// The connection fields make each record self-contained: a consumer that streams records (an
/// exporter) need not wait for the ``ConnectionRecord``, which comes only when the connection
/// closes — and a keep-alive connection of a server may stay open for hours. Records written
/// before these fields existed read back with them `nil`.
///
/// `target` is always redacted: the initializer and every assignment pass it through
/// `TargetRedaction.redact(_:)` (which is idempotent), so no sink ever sees a secret query value.
public struct HTTPRecord: Sendable, Hashable {
  /// The id of the process (`pid`).
  public var pid: Int32
  /// The short name of the process (`process`).
  public var process: String
  /// When the first byte of the request was written (client) or read (server), in nanoseconds
  /// since the Unix epoch (`start_unix_ns`).
  public var startUnixNs: UInt64
  /// From the request's start to the last byte of the response, in milliseconds (`duration_ms`).
  public var durationMs: Double
  /// The `ConnectionRecord.id` of the connection the exchange used (`connection_id`).
  public var connectionId: UInt64
  /// `http` or `https` (`scheme`).
  public var scheme: HTTPScheme
  /// The request method as sent (`GET`, `POST`…) (`method`).
  public var method: String
  /// The `Host` header, or `nil` when the request had none (`host`).
  public var host: String?
  /// The request target (path and query; the absolute form for proxies), with secret-looking
  /// query values replaced by `REDACTED` (`target`).
  public var target: String {
    get { redactedTarget }
    set { redactedTarget = TargetRedaction.redact(newValue) }
  }
  /// `target`'s storage, only ever redacted: set through `target`, or with the memberwise
  /// initializer (internal), which takes a target already redacted. A ring's consumer redacts each
  /// distinct target once, not once per record (`RecordTextCache`).
  private(set) var redactedTarget: String
  /// The response status code, or `nil` when no response arrived (`status`).
  public var status: Int?
  /// From the request's start to the first byte of the response, or `nil` without a response
  /// (`ttfb_ms`).
  public var ttfbMs: Double?
  /// Bytes of the request: head and body as they crossed the socket or TLS (`request_bytes`).
  public var requestBytes: UInt64
  /// Bytes of the response: head and body (`response_bytes`).
  public var responseBytes: UInt64
  /// Whether the response ended where its framing said (`Content-Length`, the last chunk, the
  /// close that delimits it, or HTTP/2's END_STREAM): `false` when the connection closed first (a
  /// download cut short), and for an HTTP/2 stream that RST_STREAM, a GOAWAY or the close ended
  /// first, with or without a response; `nil` for an HTTP/1 request no response answered
  /// (`response_complete`). Records written before the field read back as complete.
  public var responseComplete: Bool?
  /// Whether an earlier exchange had already used this connection (`reused_connection`); for
  /// HTTP/2, whether this is not the connection's first stream.
  public var reusedConnection: Bool
  /// The HTTP version (`protocol`): the request line's for HTTP/1.x, `h2` for an HTTP/2 stream;
  /// `nil` when no request head was read (and for records written before the field).
  public var httpProtocol: HTTPProtocol?
  /// The HTTP/2 stream's identifier (`stream_id`); `nil` for HTTP/1.x.
  public var streamId: UInt32?
  /// A gRPC call's status code from the response's trailers, or its headers for a trailers-only
  /// response (`grpc_status`: 0 is OK); `nil` for everything that is not gRPC.
  public var grpcStatus: Int?
  /// The call's `grpc-message` as sent (percent-encoded), cut at 128 bytes (`grpc_message`).
  public var grpcMessage: String?
  /// Whether this process made the request (`client`) or served it (`server`) (`role`).
  public var role: ConnectionRole?
  /// The other end of the connection: the server a client called, the client a server answered
  /// (`peer_address`, `peer_port`).
  public var peerAddress: String?
  public var peerPort: UInt16?
  /// The negotiated TLS version of an `https` exchange (`tls_version`).
  public var tlsVersion: String?
  /// The connection's setup, on its first exchange only (`nil` on a reused connection, and for a
  /// phase that did not happen: no lookup for a numeric address, no TLS): the name lookup that
  /// returned the peer's address, `connect` until established, the TLS handshake (`dns_ms`,
  /// `connect_ms`, `tls_ms`). A server's connection has no DNS or connect phase.
  public var dnsMs: Double?
  public var connectMs: Double?
  public var tlsMs: Double?
}

extension HTTPRecord {
  /// Creates a record of one exchange; `target` is redacted with `TargetRedaction.redact(_:)`.
  public init(
    pid: Int32, process: String, startUnixNs: UInt64, durationMs: Double,
    connectionId: UInt64, scheme: HTTPScheme, method: String, host: String?, target: String,
    status: Int?, ttfbMs: Double?, requestBytes: UInt64, responseBytes: UInt64, responseComplete: Bool? = nil,
    reusedConnection: Bool, httpProtocol: HTTPProtocol? = nil, streamId: UInt32? = nil, grpcStatus: Int? = nil,
    grpcMessage: String? = nil, role: ConnectionRole? = nil, peerAddress: String? = nil, peerPort: UInt16? = nil,
    tlsVersion: String? = nil, dnsMs: Double? = nil, connectMs: Double? = nil, tlsMs: Double? = nil
  ) {
    // The memberwise initializer: one assigning each property of `self` made a copy of the whole
    // record (its strings retained and released), at every record a ring's consumer reads.
    self.init(
      pid: pid, process: process, startUnixNs: startUnixNs, durationMs: durationMs, connectionId: connectionId,
      scheme: scheme, method: method, host: host, redactedTarget: TargetRedaction.redact(target), status: status,
      ttfbMs: ttfbMs, requestBytes: requestBytes, responseBytes: responseBytes,
      responseComplete: responseComplete ?? (status == nil ? nil : true), reusedConnection: reusedConnection,
      httpProtocol: httpProtocol, streamId: streamId, grpcStatus: grpcStatus, grpcMessage: grpcMessage, role: role, peerAddress: peerAddress, peerPort: peerPort, tlsVersion: tlsVersion, dnsMs: dnsMs,
      connectMs: connectMs, tlsMs: tlsMs)
  }
}
