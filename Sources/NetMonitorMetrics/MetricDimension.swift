/// The dimension (attribute) names `MetricsSink` uses: OpenTelemetry's where one exists, the
/// project's `elfhook.` namespace otherwise. Every value is low-cardinality by construction — no
/// URL path, no query, no peer address of an accepted connection.
public enum MetricDimension {
  /// `http.request.method`: the method when it is one of the standard nine, `_OTHER` otherwise.
  public static let method = "http.request.method"
  /// `http.response.status_code`: the status, absent without a response.
  public static let statusCode = "http.response.status_code"
  /// `server.address`: the `Host` header's host (client exchanges), or the name the connection
  /// was resolved from, else its peer address (client connections). Never set for the server role,
  /// where the `Host` header is the caller's to choose.
  public static let serverAddress = "server.address"
  /// `server.port`: the `Host` header's port, else the peer's port, else the scheme's default.
  public static let serverPort = "server.port"
  /// `url.scheme`: `http` or `https`.
  public static let scheme = "url.scheme"
  /// `error.type`: the status code as text for a failed exchange (≥ 400 for a client, ≥ 500 for a
  /// server), `no_response` when none came; the error's code (`ECONNREFUSED`, `EAI_NONAME`,
  /// `SSL_ERROR_SSL`) for DNS and connections. Absent on success.
  public static let errorType = "error.type"
  /// The name a DNS lookup asked for (`dns.lookup.duration`).
  public static let questionName = "dns.question.name"
  /// `network.transport`: `tcp`, `udp` or `unix`.
  public static let transport = "network.transport"
  /// `tls.protocol.version`: `1.2`, `1.3` (from the library's `TLSv1.3`).
  public static let tlsVersion = "tls.protocol.version"
  /// `elfhook.role`: `client` or `server`, where one instrument serves both.
  public static let role = "elfhook.role"
  /// `elfhook.error.call`: the hooked function that failed (`connect`, `read`, `SSL_do_handshake`).
  public static let errorCall = "elfhook.error.call"

  /// `rpc.system`: `grpc`.
  public static let rpcSystem = "rpc.system"
  /// `rpc.service`: the gRPC service, `package.Service`.
  public static let rpcService = "rpc.service"
  /// `rpc.method`: the gRPC method.
  public static let rpcMethod = "rpc.method"
  /// `rpc.grpc.status_code`: the call's status (0 is OK).
  public static let grpcStatusCode = "rpc.grpc.status_code"

  static let clientHTTP = [method, statusCode, serverAddress, serverPort, scheme, errorType]
  static let serverHTTP = [method, statusCode, scheme, errorType]
  static let rpc = [rpcSystem, rpcService, rpcMethod, grpcStatusCode]
}
