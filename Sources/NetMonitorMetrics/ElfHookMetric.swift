/// Every instrument `MetricsSink` emits: its name, unit, kind and dimensions, in one table.
///
/// Names follow the OpenTelemetry semantic conventions where one exists
/// (`http.client.request.duration`, `http.server.request.duration`, `dns.lookup.duration`); what
/// the conventions do not name lives under the project's namespace, `elfhook.`.
///
/// | instrument | unit | swift-metrics | dimensions |
/// |---|---|---|---|
/// | `http.client.request.duration` | s | `Timer` | `http.request.method`, `http.response.status_code`, `server.address`, `server.port`, `url.scheme`, `error.type` |
/// | `http.server.request.duration` | s | `Timer` | `http.request.method`, `http.response.status_code`, `url.scheme`, `error.type` |
/// | `elfhook.http.time_to_first_byte` | s | `Timer` | `elfhook.role` and the duration's dimensions for that role |
/// | `elfhook.http.client.request.size`, `….response.size` | By | `Recorder` | as `http.client.request.duration` |
/// | `elfhook.http.server.request.size`, `….response.size` | By | `Recorder` | as `http.server.request.duration` |
/// | `dns.lookup.duration` | s | `Timer` | `dns.question.name`, `error.type` |
/// | `elfhook.connection.connect.duration` | s | `Timer` | `server.address`, `server.port`, `network.transport`, `error.type` |
/// | `elfhook.connection.tls.duration` | s | `Timer` | `elfhook.role`, `server.address`, `server.port`, `tls.protocol.version`, `error.type` |
/// | `elfhook.connection.errors` | {error} | `Counter` | `elfhook.role`, `error.type`, `elfhook.error.call`, `server.address`, `server.port` |
/// | `rpc.client.duration`, `rpc.server.duration` | ms | `Timer` | `rpc.system`, `rpc.service`, `rpc.method`, `rpc.grpc.status_code`; client only: `server.address`, `server.port` |
///
/// This is the one table of every backend: `MetricsSink` (and through it the Prometheus endpoint of
/// `elfhook export --prometheus`) and `elfhook export --otlp`'s histograms all take their names,
/// units, buckets and help from it, and their values from ``MetricMapping``.
///
/// Durations are `Timer`s rather than `Recorder`s of seconds: a timer carries its unit (whole
/// nanoseconds), so each backend converts it to its own — swift-prometheus exports a timer as a
/// histogram in seconds with duration buckets, where a recorder would be a histogram of bare numbers.
///
/// The sizes are not the conventions' `http.*.body.size`: a record counts the head and the body
/// together (`request_bytes`, `response_bytes`), so giving them the body's name would misreport.
///
/// A dimension that does not apply is left out (OpenTelemetry's rule: `error.type` only on
/// failures), so one instrument can carry different dimension sets; a backend that needs one set
/// per name (Prometheus) pads with `""`, which Prometheus reads as an absent label —
/// `dimensionNames` lists the full set.
public enum ElfHookMetric: String, Sendable, Hashable, CaseIterable {
  /// Duration of an HTTP exchange the process made: request start to the last response byte.
  case httpClientRequestDuration = "http.client.request.duration"
  /// Duration of an HTTP exchange the process served.
  case httpServerRequestDuration = "http.server.request.duration"
  /// Request start to the first byte of the response, both roles.
  case httpTimeToFirstByte = "elfhook.http.time_to_first_byte"
  /// Bytes of a request the process sent (head and body).
  case httpClientRequestSize = "elfhook.http.client.request.size"
  /// Bytes of a response the process received (head and body).
  case httpClientResponseSize = "elfhook.http.client.response.size"
  /// Bytes of a request the process received (head and body).
  case httpServerRequestSize = "elfhook.http.server.request.size"
  /// Bytes of a response the process sent (head and body).
  case httpServerResponseSize = "elfhook.http.server.response.size"
  /// Duration of one `getaddrinfo` call.
  case dnsLookupDuration = "dns.lookup.duration"
  /// From `connect` to the connection being established (client connections only).
  case connectDuration = "elfhook.connection.connect.duration"
  /// The TLS handshake of a connection.
  case tlsDuration = "elfhook.connection.tls.duration"
  /// Connections that ended with an error (the first failure on each).
  case connectionErrors = "elfhook.connection.errors"
  /// A gRPC call the process made, as the RPC conventions (v1.37.0) name it: in milliseconds.
  case rpcClientDuration = "rpc.client.duration"
  /// A gRPC call the process served.
  case rpcServerDuration = "rpc.server.duration"

  /// How swift-metrics records an instrument.
  public enum Instrument: Sendable, Hashable {
    /// A `Timer`, recorded in nanoseconds; exported as a histogram in seconds.
    case timer
    /// An aggregating `Recorder` (a histogram of values in `unit`).
    case recorder
    /// A `Counter`.
    case counter
  }

  /// The instrument's name, as swift-metrics' `label` (the OpenTelemetry name).
  public var name: String { rawValue }

  /// The unit, as UCUM (OpenTelemetry's notation): `s`, `ms` (the RPC conventions' durations),
  /// `By`, `{error}`. A `Timer` records nanoseconds whatever its unit; a backend converts.
  public var unit: String {
    if self == .rpcClientDuration || self == .rpcServerDuration { return "ms" }
    return switch instrument {
    case .timer: "s"
    case .recorder: "By"
    case .counter: "{error}"
    }
  }

  /// One sentence saying what is measured, for a backend's help text (Prometheus's `# HELP`).
  public var help: String {
    switch self {
    case .httpClientRequestDuration: "HTTP/1.x exchanges the process made: request start to the last response byte."
    case .httpServerRequestDuration: "HTTP/1.x exchanges the process served: request start to the last response byte."
    case .httpTimeToFirstByte: "HTTP/1.x exchanges: request start to the first response byte."
    case .httpClientRequestSize: "Requests the process sent: head and body bytes."
    case .httpClientResponseSize: "Responses the process received: head and body bytes."
    case .httpServerRequestSize: "Requests the process received: head and body bytes."
    case .httpServerResponseSize: "Responses the process sent: head and body bytes."
    case .dnsLookupDuration: "getaddrinfo calls."
    case .connectDuration: "Client connections: connect until established."
    case .tlsDuration: "TLS handshakes."
    case .connectionErrors: "Connections that failed: the first failure of each."
    case .rpcClientDuration: "gRPC calls the process made."
    case .rpcServerDuration: "gRPC calls the process served."
    }
  }

  /// The swift-metrics instrument it is recorded with.
  public var instrument: Instrument {
    switch self {
    case .httpClientRequestSize, .httpClientResponseSize, .httpServerRequestSize, .httpServerResponseSize:
      .recorder
    case .connectionErrors: .counter
    default: .timer
    }
  }

  /// Every dimension the instrument may carry, in the order `MetricsSink` emits them.
  public var dimensionNames: [String] {
    switch self {
    case .httpClientRequestDuration, .httpClientRequestSize, .httpClientResponseSize:
      MetricDimension.clientHTTP
    case .httpServerRequestDuration, .httpServerRequestSize, .httpServerResponseSize:
      MetricDimension.serverHTTP
    case .httpTimeToFirstByte: [MetricDimension.role] + MetricDimension.clientHTTP
    case .dnsLookupDuration: [MetricDimension.questionName, MetricDimension.errorType]
    case .connectDuration:
      [MetricDimension.serverAddress, MetricDimension.serverPort, MetricDimension.transport, MetricDimension.errorType]
    case .tlsDuration:
      [
        MetricDimension.role, MetricDimension.serverAddress, MetricDimension.serverPort,
        MetricDimension.tlsVersion, MetricDimension.errorType,
      ]
    case .connectionErrors:
      [
        MetricDimension.role, MetricDimension.errorType, MetricDimension.errorCall,
        MetricDimension.serverAddress, MetricDimension.serverPort,
      ]
    case .rpcClientDuration: MetricDimension.rpc + [MetricDimension.serverAddress, MetricDimension.serverPort]
    case .rpcServerDuration: MetricDimension.rpc
    }
  }

  /// The name OpenTelemetry's Prometheus compatibility rules give it: dots become underscores,
  /// the unit is appended (`_seconds`, `_bytes`), and a counter ends in `_total` —
  /// `http_client_request_duration_seconds`, `elfhook_connection_errors_total`.
  public var prometheusName: String {
    let base = String(rawValue.map { $0 == "." ? "_" : $0 })
    switch instrument {
    case .timer: return base + "_seconds"
    case .recorder: return base + "_bytes"
    case .counter: return base + "_total"
    }
  }

  /// The instrument named `name` (an OpenTelemetry name or a `prometheusName`), if it is one of these.
  public init?(named name: String) {
    if let metric = ElfHookMetric(rawValue: name) {
      self = metric
    } else if let metric = ElfHookMetric.allCases.first(where: { $0.prometheusName == name }) {
      self = metric
    } else {
      return nil
    }
  }

  /// The Prometheus name and labels of one swift-metrics instrument, for swift-prometheus'
  /// `PrometheusMetricsFactory.nameAndLabelSanitizer`: an `ElfHookMetric` gets its
  /// ``prometheusName`` and its whole label set, in ``dimensionNames`` order, with `""` for a
  /// dimension that does not apply (Prometheus reads `""` as an absent label), so that every series
  /// of a metric has the same labels; any other instrument passes through unchanged.
  /// (swift-prometheus itself turns the dots of label names into `_`.)
  public static func prometheusNameAndLabels(_ name: String, _ labels: [(String, String)]) -> (String, [(String, String)]) {
    guard let metric = ElfHookMetric(rawValue: name) else { return (name, labels) }
    let known = metric.dimensionNames
    let padded = known.map { dimension in (dimension, labels.first { $0.0 == dimension }?.1 ?? "") }
    return (metric.prometheusName, padded + labels.filter { !known.contains($0.0) })
  }

  /// The histogram's bucket boundaries, in ``unit``: ``durationBucketsSeconds`` (in milliseconds for
  /// the `ms` instruments), ``sizeBucketsBytes``; none for the counter.
  public var buckets: [Double] {
    switch instrument {
    case .timer: unit == "ms" ? Self.durationBucketsSeconds.map { $0 * 1000 } : Self.durationBucketsSeconds
    case .recorder: Self.sizeBucketsBytes
    case .counter: []
    }
  }

  /// The histogram buckets for duration instruments, in seconds: the semantic conventions'
  /// advisory boundaries for `http.*.request.duration`, used for every duration here.
  public static let durationBucketsSeconds: [Double] = [
    0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10,
  ]

  /// The histogram buckets for size instruments, in bytes (the conventions advise none): decades
  /// from 100 B to 100 MB.
  public static let sizeBucketsBytes: [Double] = [
    100, 1_000, 10_000, 100_000, 1_000_000, 10_000_000, 100_000_000,
  ]
}
