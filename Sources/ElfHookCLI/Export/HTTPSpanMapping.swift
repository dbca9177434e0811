import Foundation
import NetMonitor
import NetMonitorMetrics

/// How one `http` record becomes OTLP spans (also in docs/export.md, "Spans").
///
/// **The request span.** Kind `CLIENT` or `SERVER` from the record's `role` (a record without one
/// was written before roles existed, when only clients were recorded: `CLIENT`). Its name is the
/// method (OTel's HTTP span name is `{method} {route}`, and a recorded exchange has no route);
/// a method outside RFC 9110's set is named and recorded as `_OTHER`, with the method as sent in
/// `http.request.method_original`. It ends `duration_ms` after `start_unix_ns`. Attributes, after
/// the OpenTelemetry HTTP semantic conventions:
/// - both roles: `http.request.method`, `http.response.status_code`, `server.address` and
///   `server.port` (from the `Host` header; without one, the peer's address on a client),
///   `network.peer.address`, `network.peer.port`, `network.protocol.name` = `http`,
///   `network.protocol.version` = `1.1`, `http.request.size` and `http.response.size` (head and
///   body, as the record counts them), `error.type`;
/// - a client: `url.full` = scheme://host + target (the target as recorded: secrets redacted);
/// - a server: `url.path`, `url.query`, `url.scheme`, `client.address`, `client.port`;
/// - elfhook's own: `elfhook.connection.id`, `elfhook.http.reused_connection`,
///   `elfhook.http.ttfb_ms`.
///
/// **Errors.** A client's status ≥ 400 or a server's ≥ 500 sets `error.type` to the status code
/// and the span status to `ERROR` (a server's 4xx is the client's fault: status left unset, as the
/// conventions say). An exchange that got no response at all (the connection failed or closed
/// first) has `error.type` = `no_response` and status `ERROR`.
///
/// **Connection setup.** On the first exchange of a connection (`reused_connection` false), the
/// record's `dns_ms`, `connect_ms` and `tls_ms` become child spans of the request span, named as
/// .NET names its connection-setup activities: `DNS lookup`, `socket connect`, `TLS handshake`
/// (kind `INTERNAL`). The record has their durations, not their start times: they are laid end to
/// end, finishing when the request starts — the order they happen in — and the request span starts
/// at the first of them, so that a trace view shows the whole wait. (`duration_ms` and the
/// duration histograms stay the exchange's own.) A reused connection's request has no children.
///
/// **gRPC calls** (an HTTP/2 stream with a `grpc_status`) follow the RPC conventions as of
/// semantic conventions v1.37.0: the span is named `service/method` and carries `rpc.system` =
/// `grpc`, `rpc.service`, `rpc.method` and `rpc.grpc.status_code`; a client's call with any
/// status but OK, and a server's with UNKNOWN, DEADLINE_EXCEEDED, UNIMPLEMENTED, INTERNAL,
/// UNAVAILABLE or DATA_LOSS, has `error.type` = the status code and span status `ERROR`.
/// `network.protocol.version` is the record's (`1.0`, `1.1`, `2`).
///
/// **Ids.** Each record is its own trace; ids come from ``SpanIdentity``, so a resend repeats them.
enum HTTPSpanMapping {
  /// The spans of `record`, the request span first. `position` is the record's place in its
  /// source (see ``SpanIdentity``).
  static func spans(for record: HTTPRecord, position: UInt64) -> [OTLPSpan] {
    let identity = SpanIdentity(
      pid: record.pid, connectionId: record.connectionId, startUnixNs: record.startUnixNs, position: position)
    let role = record.role ?? .client
    let requestId = identity.spanId("request")
    let phases = setupPhases(of: record)
    var start = record.startUnixNs
    var children: [OTLPSpan] = []
    for phase in phases.reversed() {
      let phaseStart = start &- nanoseconds(phase.milliseconds)
      var span = OTLPSpan()
      span.traceID = identity.traceId
      span.spanID = identity.spanId(phase.label)
      span.parentSpanID = requestId
      span.name = phase.name
      span.kind = .internal
      span.startTimeUnixNano = phaseStart
      span.endTimeUnixNano = start
      span.attributes = phase.attributes.otlp
      children.insert(span, at: 0)
      start = phaseStart
    }
    var request = OTLPSpan()
    request.traceID = identity.traceId
    request.spanID = requestId
    let call = GRPCCall(record)
    request.name = call.map { "\($0.service)/\($0.method)" } ?? MetricAttributes.method(record.method)
    request.kind = role == .server ? .server : .client
    request.startTimeUnixNano = start
    request.endTimeUnixNano = record.startUnixNs &+ nanoseconds(record.durationMs)
    request.attributes = attributes(of: record, role: role).otlp
    if let errorType = MetricAttributes.httpErrorType(of: record, role: role) {
      request.status.code = .error
      if errorType == "no_response" { request.status.message = "no response" }
      if let call, call.status != 0, let message = call.message { request.status.message = message }
    }
    return [request] + children
  }

  /// `network.protocol.version` of the record's HTTP version (`1.1` when it is not known).
  static func protocolVersion(of record: HTTPRecord) -> String {
    switch record.httpProtocol {
    case .http10: "1.0"
    case .h2: "2"
    case .http11, nil: "1.1"
    }
  }

  /// `server.address` and `server.port`: the `Host` header's, else the peer's on a client; a
  /// `Host` without a port means the scheme's default port.
  static func server(of record: HTTPRecord, role: ConnectionRole) -> (address: String?, port: UInt16?) {
    if let header = record.host, !header.isEmpty {
      let parsed = MetricAttributes.hostAndPort(header)
      return (parsed.host, parsed.port ?? (record.scheme == .https ? 443 : 80))
    }
    return role == .client ? (record.peerAddress, record.peerPort) : (nil, nil)
  }

  private static func attributes(of record: HTTPRecord, role: ConnectionRole) -> AttributeList {
    var list = AttributeList()
    let method = MetricAttributes.method(record.method)
    list.add("http.request.method", method)
    if method != record.method { list.add("http.request.method_original", record.method) }
    list.add("http.response.status_code", record.status)
    let server = server(of: record, role: role)
    list.add("server.address", server.address)
    list.add("server.port", server.port)
    let scheme = record.scheme.rawValue
    switch role {
    case .client:
      if record.target.hasPrefix("http://") || record.target.hasPrefix("https://") {
        list.add("url.full", record.target)  // the absolute form, sent to a proxy
      } else {
        let authority = record.host ?? record.peerAddress.map { peer in
          let host = peer.contains(":") ? "[\(peer)]" : peer
          return record.peerPort.map { "\(host):\($0)" } ?? host
        }
        list.add("url.full", authority.map { "\(scheme)://\($0)\(record.target)" })
      }
    case .server:
      let parts = record.target.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
      list.add("url.path", parts.first.map(String.init))
      list.add("url.query", parts.count > 1 ? String(parts[1]) : nil)
      list.add("url.scheme", scheme)
      list.add("client.address", record.peerAddress)
      list.add("client.port", record.peerPort)
    }
    list.add("network.peer.address", record.peerAddress)
    list.add("network.peer.port", record.peerPort)
    list.add("network.protocol.name", "http")
    list.add("network.protocol.version", protocolVersion(of: record))
    if let call = GRPCCall(record) {
      list.add("rpc.system", "grpc")
      list.add("rpc.service", call.service)
      list.add("rpc.method", call.method)
      list.add("rpc.grpc.status_code", call.status)
    }
    list.add("http.request.size", record.requestBytes)
    list.add("http.response.size", record.responseBytes)
    list.add("error.type", MetricAttributes.httpErrorType(of: record, role: role))
    list.add("elfhook.connection.id", record.connectionId)
    list.add("elfhook.http.reused_connection", record.reusedConnection)
    list.add("elfhook.http.ttfb_ms", record.ttfbMs)
    return list
  }

  /// One connection-setup phase of a first exchange.
  struct Phase {
    var label: String
    var name: String
    var milliseconds: Double
    var attributes: AttributeList
  }

  /// The setup phases the record has durations for, in the order they happen.
  static func setupPhases(of record: HTTPRecord) -> [Phase] {
    guard !record.reusedConnection else { return [] }
    let role = record.role ?? .client
    let server = server(of: record, role: role)
    var phases: [Phase] = []
    if let dns = record.dnsMs {
      var list = AttributeList()
      list.add("dns.question.name", server.address)
      phases.append(Phase(label: "dns", name: "DNS lookup", milliseconds: dns, attributes: list))
    }
    if let connect = record.connectMs {
      var list = AttributeList()
      list.add("network.peer.address", record.peerAddress)
      list.add("network.peer.port", record.peerPort)
      list.add("network.transport", "tcp")
      list.add("server.address", server.address)
      list.add("server.port", server.port)
      phases.append(Phase(label: "connect", name: "socket connect", milliseconds: connect, attributes: list))
    }
    if let tls = record.tlsMs {
      var list = AttributeList()
      list.add("server.address", server.address)
      if let version = record.tlsVersion {
        let parsed = TLSVersionName(version)
        list.add("tls.protocol.name", parsed.name)
        list.add("tls.protocol.version", parsed.version)
      }
      phases.append(Phase(label: "tls", name: "TLS handshake", milliseconds: tls, attributes: list))
    }
    return phases
  }

  /// Milliseconds as whole nanoseconds (negative and non-finite values as 0).
  static func nanoseconds(_ milliseconds: Double) -> UInt64 {
    guard milliseconds.isFinite, milliseconds > 0 else { return 0 }
    return UInt64((milliseconds * 1_000_000).rounded())
  }
}
