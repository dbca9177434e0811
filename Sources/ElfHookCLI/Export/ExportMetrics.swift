import NetMonitor

/// The cumulative histograms of every record exported so far (see ``MetricInstrument`` for what
/// each measures), per process: what `elfhook export` sends as one `ExportMetricsServiceRequest`.
///
/// Temporality is cumulative: each process's streams start at its first record's `start_unix_ns`
/// and every export repeats the totals. The exporter records a batch only once the collector has
/// acknowledged its spans, and the state file persists these histograms with the cursors, so a
/// restarted exporter continues the same streams (same start time, no record counted twice).
struct ExportMetrics: Codable, Sendable {
  /// The histograms of one process.
  struct ProcessStreams: Codable, Sendable {
    var resource: ProcessResource
    var startUnixNs: UInt64
    /// Metric name → one point per attribute set, in the order first seen.
    var histograms: [String: [HistogramPoint]] = [:]
  }

  private(set) var processes: [ProcessStreams] = []

  /// Whether nothing has been recorded yet.
  var isEmpty: Bool { processes.isEmpty }

  /// Adds `transaction`'s values to the histograms it belongs to.
  mutating func record(_ transaction: Transaction) {
    switch transaction {
    case .http(let record): recordHTTP(record)
    case .dns(let record):
      var list = AttributeList()
      list.add("dns.question.name", record.host)
      list.add("error.type", record.error?.code)
      add(record.durationMs / 1000, to: .dnsLookupDuration, list, transaction)
    case .connection(let record): recordConnection(record)
    }
  }

  /// A connection's phases count once: from its first HTTP exchange, which carries them (so they
  /// show as soon as that response is complete, not when a keep-alive connection closes), else
  /// from its `connection` record (a failed connect or handshake, a connection without HTTP) —
  /// the rule `NetMonitorMetrics` follows, so both exporters count alike.
  private mutating func recordConnection(_ record: ConnectionRecord) {
    guard (record.httpExchanges ?? 0) == 0 else { return }
    let transaction = Transaction.connection(record)
    var server = AttributeList()
    if record.role == .client {
      server.add("server.address", record.host ?? record.peerAddress)
      server.add("server.port", record.peerPort)
    }
    let error = record.error
    if let connect = record.connectMs, record.role == .client {
      var list = server
      list.add("network.transport", record.transport.rawValue)
      list.add("error.type", error.flatMap { $0.call == "connect" ? $0.code : nil })
      add(connect / 1000, to: .connectDuration, list, transaction)
    }
    if let tls = record.tlsMs {
      var list = AttributeList()
      list.add("elfhook.role", record.role.rawValue)
      list.append(server)
      list.add("tls.protocol.version", record.tlsVersion.map { TLSVersionName($0).version })
      list.add("error.type", error.flatMap { Self.handshakeCalls.contains($0.call) ? $0.code : nil })
      add(tls / 1000, to: .tlsDuration, list, transaction)
    }
  }

  /// The calls whose failure is a failed TLS handshake.
  static let handshakeCalls: Set<String> = ["SSL_do_handshake", "SSL_connect", "SSL_accept"]

  /// The phases of a connection's first exchange (see ``recordConnection(_:)``).
  private mutating func recordSetup(of record: HTTPRecord, role: ConnectionRole) {
    guard !record.reusedConnection else { return }
    let transaction = Transaction.http(record)
    var server = AttributeList()
    if role == .client {
      let parsed = HTTPSpanMapping.server(of: record, role: role)
      server.add("server.address", parsed.address ?? record.peerAddress)
      server.add("server.port", record.peerPort ?? parsed.port)
    }
    if let connect = record.connectMs, role == .client {
      var list = server
      list.add("network.transport", "tcp")
      add(connect / 1000, to: .connectDuration, list, transaction)
    }
    if let tls = record.tlsMs {
      var list = AttributeList()
      list.add("elfhook.role", role.rawValue)
      list.append(server)
      list.add("tls.protocol.version", record.tlsVersion.map { TLSVersionName($0).version })
      add(tls / 1000, to: .tlsDuration, list, transaction)
    }
  }

  private mutating func recordHTTP(_ record: HTTPRecord) {
    let role = record.role ?? .client
    let server = HTTPSpanMapping.server(of: record, role: role)
    var list = AttributeList()
    list.add("http.request.method", HTTPSpanMapping.normalizedMethod(record.method))
    list.add("http.response.status_code", record.status)
    if role == .client {  // opt-in for a server in the conventions; its Host header is the client's say
      list.add("server.address", server.address)
      list.add("server.port", server.port)
    }
    list.add("url.scheme", record.scheme.rawValue)
    list.add("error.type", HTTPSpanMapping.errorType(of: record, role: role))
    let transaction = Transaction.http(record)
    let isClient = role == .client
    add(record.durationMs / 1000, to: isClient ? .httpClientDuration : .httpServerDuration, list, transaction)
    add(Double(record.requestBytes), to: isClient ? .httpClientRequestSize : .httpServerRequestSize, list, transaction)
    add(Double(record.responseBytes), to: isClient ? .httpClientResponseSize : .httpServerResponseSize, list, transaction)
    if let call = GRPCCall(record) {
      var rpc = AttributeList()
      rpc.add("rpc.system", "grpc")
      rpc.add("rpc.service", call.service)
      rpc.add("rpc.method", call.method)
      rpc.add("rpc.grpc.status_code", call.status)
      if isClient {
        rpc.add("server.address", server.address)
        rpc.add("server.port", server.port)
      }
      add(record.durationMs, to: isClient ? .rpcClientDuration : .rpcServerDuration, rpc, transaction)
    }
    if let ttfb = record.ttfbMs {
      var withRole = list
      withRole.add("elfhook.role", role.rawValue)
      add(ttfb / 1000, to: .timeToFirstByte, withRole, transaction)
    }
    recordSetup(of: record, role: role)
  }

  private mutating func add(
    _ value: Double, to instrument: MetricInstrument, _ list: AttributeList, _ transaction: Transaction
  ) {
    let resource = ProcessResource(pid: transaction.pid, process: transaction.process)
    let index =
      processes.firstIndex { $0.resource == resource }
      ?? {
        processes.append(ProcessStreams(resource: resource, startUnixNs: transaction.startUnixNs))
        return processes.count - 1
      }()
    processes[index].startUnixNs = min(processes[index].startUnixNs, transaction.startUnixNs)
    var points = processes[index].histograms[instrument.name] ?? []
    let attributes = list.attributes
    if let existing = points.firstIndex(where: { $0.attributes == attributes }) {
      points[existing].record(value, boundaries: instrument.boundaries)
    } else {
      var point = HistogramPoint(attributes: attributes, bucketCount: instrument.boundaries.count + 1)
      point.record(value, boundaries: instrument.boundaries)
      points.append(point)
    }
    processes[index].histograms[instrument.name] = points
  }

  /// The export request: every histogram, cumulative up to `timeUnixNs`.
  func request(serviceName: String?, timeUnixNs: UInt64) -> OTLPMetricsRequest {
    var request = OTLPMetricsRequest()
    for process in processes {
      var scopeMetrics = OTLPScopeMetrics()
      scopeMetrics.scope = ProcessResource.scope
      for instrument in MetricInstrument.all {
        guard let points = process.histograms[instrument.name], !points.isEmpty else { continue }
        var histogram = OTLPHistogram()
        histogram.aggregationTemporality = .cumulative
        histogram.dataPoints = points.map {
          $0.otlp(boundaries: instrument.boundaries, startUnixNs: process.startUnixNs, timeUnixNs: timeUnixNs)
        }
        var metric = OTLPMetric()
        metric.name = instrument.name
        metric.unit = instrument.unit
        metric.description_p = instrument.description
        metric.histogram = histogram
        scopeMetrics.metrics.append(metric)
      }
      var resourceMetrics = OTLPResourceMetrics()
      resourceMetrics.resource = process.resource.otlp(serviceName: serviceName)
      resourceMetrics.scopeMetrics = [scopeMetrics]
      request.resourceMetrics.append(resourceMetrics)
    }
    return request
  }
}

extension MetricInstrument {
  /// Every instrument, in the order a request lists them.
  static let all: [MetricInstrument] = [
    .httpClientDuration, .httpServerDuration, .timeToFirstByte, .dnsLookupDuration, .connectDuration, .tlsDuration,
    .httpClientRequestSize, .httpClientResponseSize, .httpServerRequestSize, .httpServerResponseSize,
  ]
}
