/// One histogram the exporter keeps (also in docs/export.md, "Metrics"). Names follow the
/// OpenTelemetry semantic conventions where they define one; what they do not define is under
/// `elfhook.`:
/// - `http.client.request.duration`, `http.server.request.duration` (s): `duration_ms` of each
///   `http` record, by role, with the conventions' advisory bucket boundaries; attributes
///   `http.request.method`, `http.response.status_code`, `url.scheme`, `error.type`, and for a
///   client `server.address`, `server.port` (the same dimensions as `NetMonitorMetrics`);
/// - `dns.lookup.duration` (s): each `dns` record, with `dns.question.name` (required by the
///   conventions) and `error.type`;
/// - `elfhook.connection.connect.duration`, `elfhook.connection.tls.duration` (s): each
///   connection's `connect_ms` (clients) and `tls_ms`, once: from its first HTTP exchange, else
///   from its `connection` record (failed, or without HTTP) — see `ExportMetrics`;
/// - `elfhook.http.time_to_first_byte` (s): `ttfb_ms` of each `http` record that has one, with
///   `elfhook.role` (`client`, `server`);
/// - `elfhook.http.client.request.size`, `…response.size`, and the `server` pair (By): head and
///   body of each exchange. Not the conventions' `http.client.request.body.size`: that counts the
///   body alone, which a record does not carry on its own.
struct MetricInstrument: Hashable, Sendable {
  var name: String
  var unit: String
  var description: String
  var boundaries: [Double]

  /// The conventions' advisory boundaries for HTTP and DNS durations, in seconds.
  static let durationBoundaries: [Double] = [0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10]
  /// Boundaries for sizes in bytes: powers of four from 64 B to 64 MiB.
  static let sizeBoundaries: [Double] = (3...13).map { Double(1 << (2 * $0)) }

  static let httpClientDuration = duration("http.client.request.duration", "Duration of HTTP client requests.")
  static let httpServerDuration = duration("http.server.request.duration", "Duration of HTTP server requests.")
  static let dnsLookupDuration = duration("dns.lookup.duration", "Duration of DNS lookups (getaddrinfo calls).")
  static let connectDuration = duration(
    "elfhook.connection.connect.duration", "Duration of connect() on a connection, to success or failure.")
  static let tlsDuration = duration("elfhook.connection.tls.duration", "Duration of the TLS handshake of a connection.")
  static let timeToFirstByte = duration(
    "elfhook.http.time_to_first_byte", "From the start of an HTTP request to the first byte of its response.")
  static let httpClientRequestSize = size("elfhook.http.client.request.size", "Bytes of HTTP client requests, head and body.")
  static let httpClientResponseSize = size(
    "elfhook.http.client.response.size", "Bytes of the responses HTTP clients received, head and body.")
  static let httpServerRequestSize = size(
    "elfhook.http.server.request.size", "Bytes of the requests HTTP servers received, head and body.")
  static let httpServerResponseSize = size("elfhook.http.server.response.size", "Bytes of HTTP server responses, head and body.")

  /// gRPC calls' durations, as the RPC conventions (v1.37.0) name them: in milliseconds.
  static let rpcClientDuration = MetricInstrument(
    name: "rpc.client.duration", unit: "ms", description: "Duration of outbound gRPC calls.",
    boundaries: durationBoundaries.map { $0 * 1000 })
  static let rpcServerDuration = MetricInstrument(
    name: "rpc.server.duration", unit: "ms", description: "Duration of inbound gRPC calls.",
    boundaries: durationBoundaries.map { $0 * 1000 })

  private static func duration(_ name: String, _ description: String) -> MetricInstrument {
    MetricInstrument(name: name, unit: "s", description: description, boundaries: durationBoundaries)
  }

  private static func size(_ name: String, _ description: String) -> MetricInstrument {
    MetricInstrument(name: name, unit: "By", description: description, boundaries: sizeBoundaries)
  }
}
