import NetMonitor

/// What a record becomes in metrics: the one mapping of records to instruments and attributes,
/// which `MetricsSink` (and so `elfhook export --prometheus`) and `elfhook export --otlp` both
/// record. Names, units and dimensions are ``ElfHookMetric``'s; each attribute rule is one of
/// ``MetricAttributes``.
///
/// - `http`: `http.{client,server}.request.duration`, the request and response sizes, and
///   `elfhook.http.time_to_first_byte` when a response came; for a gRPC call also
///   `rpc.{client,server}.duration`. The role decides client or server (no role: client).
///   `server.address`/`server.port` come from the `Host` header, so the series follow the name a
///   program asked for, not the address it happened to reach; a server's are never set.
/// - `dns`: `dns.lookup.duration`, with `error.type` (`EAI_NONAME`…) on failure.
/// - `connection`: `elfhook.connection.connect.duration` (clients), `elfhook.connection.tls.duration`
///   and one `elfhook.connection.errors` for a connection that failed.
///
/// Each connection's phases count once: from its first HTTP exchange, which carries them, so they
/// show when its first response is complete rather than when a keep-alive connection closes, maybe
/// hours later; else from its connection record (one that failed to connect or to handshake, one
/// without HTTP). A negative or non-finite duration (a clock step) is left out rather than
/// recorded wrong.
public enum MetricMapping {
  /// Every measurement `transaction` gives, in a fixed order.
  public static func measurements(of transaction: Transaction) -> [MetricMeasurement] {
    var measurements = Measurements()
    switch transaction {
    case .http(let record): measurements.addHTTP(record)
    case .dns(let record): measurements.addDNS(record)
    case .connection(let record): measurements.addConnection(record)
    }
    return measurements.list
  }
}

/// The measurements of one record, as they are added.
private struct Measurements {
  var list: [MetricMeasurement] = []

  mutating func add(_ metric: ElfHookMetric, _ amount: MetricMeasurement.Amount, _ attributes: [MetricAttribute]) {
    if case .milliseconds(let milliseconds) = amount, !(milliseconds.isFinite && milliseconds >= 0) { return }
    list.append(MetricMeasurement(metric: metric, amount: amount, attributes: attributes))
  }

  mutating func addHTTP(_ record: HTTPRecord) {
    let role = record.role ?? .client
    let client = role == .client
    var attributes = [MetricAttribute(MetricDimension.method, MetricAttributes.method(record.method))]
    if let status = record.status { attributes.append(MetricAttribute(MetricDimension.statusCode, status)) }
    let server = client ? Self.server(of: record) : []
    attributes += server
    attributes.append(MetricAttribute(MetricDimension.scheme, record.scheme.rawValue))
    if let error = MetricAttributes.httpErrorType(of: record, role: role) {
      attributes.append(MetricAttribute(MetricDimension.errorType, error))
    }
    add(client ? .httpClientRequestDuration : .httpServerRequestDuration, .milliseconds(record.durationMs), attributes)
    add(client ? .httpClientRequestSize : .httpServerRequestSize, .bytes(record.requestBytes), attributes)
    add(client ? .httpClientResponseSize : .httpServerResponseSize, .bytes(record.responseBytes), attributes)
    if let ttfb = record.ttfbMs {
      add(.httpTimeToFirstByte, .milliseconds(ttfb), [MetricAttribute(MetricDimension.role, role.rawValue)] + attributes)
    }
    if let call = GRPCCall(record) {
      let rpc = [
        MetricAttribute(MetricDimension.rpcSystem, "grpc"), MetricAttribute(MetricDimension.rpcService, call.service),
        MetricAttribute(MetricDimension.rpcMethod, call.method), MetricAttribute(MetricDimension.grpcStatusCode, call.status),
      ]
      add(client ? .rpcClientDuration : .rpcServerDuration, .milliseconds(record.durationMs), rpc + server)
    }
    addSetup(of: record, role: role)
  }

  /// `server.address` (when known) and `server.port` of a client exchange.
  private static func server(of record: HTTPRecord) -> [MetricAttribute] {
    let (address, port) = MetricAttributes.server(of: record)
    return (address.map { [MetricAttribute(MetricDimension.serverAddress, $0)] } ?? [])
      + [MetricAttribute(MetricDimension.serverPort, port)]
  }

  /// The connection phases a connection's first exchange carries.
  private mutating func addSetup(of record: HTTPRecord, role: ConnectionRole) {
    guard !record.reusedConnection else { return }
    var server: [MetricAttribute] = []
    if role == .client {
      let (address, port) = MetricAttributes.server(of: record)
      if let address = address ?? record.peerAddress { server.append(MetricAttribute(MetricDimension.serverAddress, address)) }
      server.append(MetricAttribute(MetricDimension.serverPort, record.peerPort ?? port))
    }
    if let connect = record.connectMs, role == .client {
      add(.connectDuration, .milliseconds(connect), server + [MetricAttribute(MetricDimension.transport, "tcp")])
    }
    if let tls = record.tlsMs {
      var attributes = [MetricAttribute(MetricDimension.role, role.rawValue)] + server
      if let version = record.tlsVersion {
        attributes.append(MetricAttribute(MetricDimension.tlsVersion, MetricAttributes.tlsVersion(version)))
      }
      add(.tlsDuration, .milliseconds(tls), attributes)
    }
  }

  mutating func addDNS(_ record: DNSRecord) {
    // The conventions require the name looked up; it also gives every series of the instrument a
    // label, which swift-prometheus needs: it traps (crashing the host) when one name gets an
    // unlabelled series and a labelled one.
    var attributes = [MetricAttribute(MetricDimension.questionName, record.host)]
    if let error = record.error { attributes.append(MetricAttribute(MetricDimension.errorType, error.code)) }
    add(.dnsLookupDuration, .milliseconds(record.durationMs), attributes)
  }

  mutating func addConnection(_ record: ConnectionRecord) {
    var server: [MetricAttribute] = []
    if record.role == .client {
      if let address = record.host ?? record.peerAddress { server.append(MetricAttribute(MetricDimension.serverAddress, address)) }
      if let port = record.peerPort { server.append(MetricAttribute(MetricDimension.serverPort, port)) }
    }
    let error = record.error
    // A connection with HTTP exchanges had its phases counted with its first exchange.
    let counted = (record.httpExchanges ?? 0) > 0
    if let connect = record.connectMs, record.role == .client, !counted {
      var attributes = server + [MetricAttribute(MetricDimension.transport, record.transport.rawValue)]
      if let error, error.call == "connect" { attributes.append(MetricAttribute(MetricDimension.errorType, error.code)) }
      add(.connectDuration, .milliseconds(connect), attributes)
    }
    if let tls = record.tlsMs, !counted {
      var attributes = [MetricAttribute(MetricDimension.role, record.role.rawValue)] + server
      if let version = record.tlsVersion {
        attributes.append(MetricAttribute(MetricDimension.tlsVersion, MetricAttributes.tlsVersion(version)))
      }
      if let error, MetricAttributes.isHandshakeCall(error.call) {
        attributes.append(MetricAttribute(MetricDimension.errorType, error.code))
      }
      add(.tlsDuration, .milliseconds(tls), attributes)
    }
    if let error {
      let attributes = [
        MetricAttribute(MetricDimension.role, record.role.rawValue), MetricAttribute(MetricDimension.errorType, error.code),
        MetricAttribute(MetricDimension.errorCall, error.call),
      ]
      add(.connectionErrors, .one, attributes + server)
    }
  }
}
