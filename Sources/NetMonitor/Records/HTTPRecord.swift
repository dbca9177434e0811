/// One HTTP/1.x request and its response.
///
/// JSON keys, in this order: `kind` (`"http"`), `pid`, `process`, `start_unix_ns`, `duration_ms`,
/// `connection_id`, `scheme`, `method`, `host`, `target`, `status`, `ttfb_ms`, `request_bytes`,
/// `response_bytes`, `reused_connection`.
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
    didSet { target = TargetRedaction.redact(target) }
  }
  /// The response status code, or `nil` when no response arrived (`status`).
  public var status: Int?
  /// From the request's start to the first byte of the response, or `nil` without a response
  /// (`ttfb_ms`).
  public var ttfbMs: Double?
  /// Bytes of the request: head and body as they crossed the socket or TLS (`request_bytes`).
  public var requestBytes: UInt64
  /// Bytes of the response: head and body (`response_bytes`).
  public var responseBytes: UInt64
  /// Whether an earlier exchange had already used this connection (`reused_connection`).
  public var reusedConnection: Bool

  /// Creates a record of one exchange; `target` is redacted with `TargetRedaction.redact(_:)`.
  public init(
    pid: Int32, process: String, startUnixNs: UInt64, durationMs: Double,
    connectionId: UInt64, scheme: HTTPScheme, method: String, host: String?, target: String,
    status: Int?, ttfbMs: Double?, requestBytes: UInt64, responseBytes: UInt64,
    reusedConnection: Bool
  ) {
    self.pid = pid
    self.process = process
    self.startUnixNs = startUnixNs
    self.durationMs = durationMs
    self.connectionId = connectionId
    self.scheme = scheme
    self.method = method
    self.host = host
    self.target = TargetRedaction.redact(target)
    self.status = status
    self.ttfbMs = ttfbMs
    self.requestBytes = requestBytes
    self.responseBytes = responseBytes
    self.reusedConnection = reusedConnection
  }
}
