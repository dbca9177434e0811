import CoreMetrics
import NetMonitor

/// Records the instruments of one transaction through one factory: `MetricsSink`'s mapping,
/// record kind by record kind.
struct MetricEmitter {
  let factory: any MetricsFactory
  /// Where made instruments are kept; `nil`: made anew for each record.
  let cache: InstrumentCache?

  func emitHTTP(_ record: HTTPRecord) {
    let role = Self.role(of: record)
    var dimensions = [(MetricDimension.method, MetricAttributes.method(record.method))]
    if let status = record.status { dimensions.append((MetricDimension.statusCode, String(status))) }
    if role == .client {
      let (address, port) = Self.server(of: record)
      if let address { dimensions.append((MetricDimension.serverAddress, address)) }
      dimensions.append((MetricDimension.serverPort, String(port)))
    }
    dimensions.append((MetricDimension.scheme, record.scheme.rawValue))
    if let error = MetricAttributes.httpErrorType(status: record.status, responseComplete: record.responseComplete, role: role) {
      dimensions.append((MetricDimension.errorType, error))
    }
    let client = role == .client
    time(client ? .httpClientRequestDuration : .httpServerRequestDuration, record.durationMs, dimensions)
    size(client ? .httpClientRequestSize : .httpServerRequestSize, record.requestBytes, dimensions)
    size(client ? .httpClientResponseSize : .httpServerResponseSize, record.responseBytes, dimensions)
    if let ttfb = record.ttfbMs {
      time(.httpTimeToFirstByte, ttfb, [(MetricDimension.role, role.rawValue)] + dimensions)
    }
    emitSetup(of: record, role: role)
  }

  /// The connection phases a connection's first exchange carries: the connection is counted here,
  /// as soon as its first response is complete, and not again at its close.
  private func emitSetup(of record: HTTPRecord, role: ConnectionRole) {
    guard !record.reusedConnection, record.connectMs != nil || record.tlsMs != nil else { return }
    var server: [(String, String)] = []
    if role == .client {
      let (address, port) = Self.server(of: record)
      if let address = address ?? record.peerAddress { server.append((MetricDimension.serverAddress, address)) }
      server.append((MetricDimension.serverPort, String(record.peerPort ?? port)))
    }
    if let connect = record.connectMs, role == .client {
      time(.connectDuration, connect, server + [(MetricDimension.transport, ConnectionTransport.tcp.rawValue)])
    }
    if let tls = record.tlsMs {
      var dimensions = [(MetricDimension.role, role.rawValue)] + server
      if let version = record.tlsVersion {
        dimensions.append((MetricDimension.tlsVersion, MetricAttributes.tlsVersion(version)))
      }
      time(.tlsDuration, tls, dimensions)
    }
  }

  func emitDNS(_ record: DNSRecord) {
    // The conventions require the name looked up; it also gives every series of the instrument a
    // label, which swift-prometheus needs: it traps (crashing the host) when one name gets an
    // unlabelled series and a labelled one.
    var dimensions = [(MetricDimension.questionName, record.host)]
    if let error = record.error { dimensions.append((MetricDimension.errorType, error.code)) }
    time(.dnsLookupDuration, record.durationMs, dimensions)
  }

  func emitConnection(_ record: ConnectionRecord) {
    var server: [(String, String)] = []
    if record.role == .client {
      if let address = record.host ?? record.peerAddress { server.append((MetricDimension.serverAddress, address)) }
      if let port = record.peerPort { server.append((MetricDimension.serverPort, String(port))) }
    }
    let error = record.error
    // A connection with HTTP exchanges had its phases counted with its first exchange.
    let counted = (record.httpExchanges ?? 0) > 0
    if let connect = record.connectMs, record.role == .client, !counted {
      var dimensions = server + [(MetricDimension.transport, record.transport.rawValue)]
      if let error, error.call == "connect" { dimensions.append((MetricDimension.errorType, error.code)) }
      time(.connectDuration, connect, dimensions)
    }
    if let tls = record.tlsMs, !counted {
      var dimensions = [(MetricDimension.role, record.role.rawValue)] + server
      if let version = record.tlsVersion {
        dimensions.append((MetricDimension.tlsVersion, MetricAttributes.tlsVersion(version)))
      }
      if let error, MetricAttributes.isHandshakeCall(error.call) {
        dimensions.append((MetricDimension.errorType, error.code))
      }
      time(.tlsDuration, tls, dimensions)
    }
    if let error {
      let dimensions =
        [
          (MetricDimension.role, record.role.rawValue), (MetricDimension.errorType, error.code),
          (MetricDimension.errorCall, error.call),
        ] + server
      counter(.connectionErrors, dimensions).increment()
    }
  }

  /// The side of the exchange the process was on; a record without one (written before records
  /// had roles) is taken as a client's.
  static func role(of record: HTTPRecord) -> ConnectionRole {
    record.role ?? .client
  }

  /// `server.address` and `server.port` of a client exchange: the `Host` header's, the port
  /// defaulting to the scheme's; without a `Host` header, the peer's address and port.
  static func server(of record: HTTPRecord) -> (address: String?, port: UInt16) {
    guard let host = record.host, !host.isEmpty else {
      return (record.peerAddress, record.peerPort ?? MetricAttributes.defaultPort(record.scheme))
    }
    let (address, port) = MetricAttributes.hostAndPort(host)
    return (address.isEmpty ? nil : address, port ?? MetricAttributes.defaultPort(record.scheme))
  }

  private func time(_ metric: ElfHookMetric, _ milliseconds: Double, _ dimensions: [(String, String)]) {
    guard let nanoseconds = MetricAttributes.nanoseconds(milliseconds: milliseconds) else { return }
    let timer =
      cache?.timer(metric, dimensions, factory: factory)
      ?? Timer(label: metric.name, dimensions: dimensions, factory: factory)
    timer.recordNanoseconds(nanoseconds)
  }

  private func size(_ metric: ElfHookMetric, _ bytes: UInt64, _ dimensions: [(String, String)]) {
    let recorder =
      cache?.recorder(metric, dimensions, factory: factory)
      ?? Recorder(label: metric.name, dimensions: dimensions, aggregate: true, factory: factory)
    recorder.record(bytes)
  }

  private func counter(_ metric: ElfHookMetric, _ dimensions: [(String, String)]) -> Counter {
    cache?.counter(metric, dimensions, factory: factory)
      ?? Counter(label: metric.name, dimensions: dimensions, factory: factory)
  }
}
