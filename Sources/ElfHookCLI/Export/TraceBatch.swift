import NetMonitor

/// A record read from a source, with its position there (the byte offset of its line in a JSON
/// Lines file, its slot's position in a ring): part of its span ids (``SpanIdentity``).
struct SourcedRecord: Sendable {
  var transaction: Transaction
  var position: UInt64

  /// How many spans the record becomes: an `http` record its request span and one per setup
  /// phase; `dns` and `connection` records none (they feed the metrics only — a failed lookup or
  /// connection shows there, with its `error.type`, and a successful one already appears as a
  /// setup phase of the request that used it).
  var spanCount: Int {
    guard case .http(let record) = transaction else { return 0 }
    return 1 + HTTPSpanMapping.setupPhases(of: record).count
  }
}

/// Builds one `ExportTraceServiceRequest` from records: their spans, grouped by process (each
/// process is one OTLP resource).
enum TraceBatch {
  /// At most this many spans go in one request.
  static let maxSpans = 512

  /// The request for `records`, or `nil` when none of them becomes a span.
  static func request(for records: [SourcedRecord], serviceName: String?) -> OTLPTraceRequest? {
    var order: [ProcessResource] = []
    var spans: [ProcessResource: [OTLPSpan]] = [:]
    for record in records {
      guard case .http(let http) = record.transaction else { continue }
      let resource = ProcessResource(pid: http.pid, process: http.process)
      if spans[resource] == nil { order.append(resource) }
      spans[resource, default: []] += HTTPSpanMapping.spans(for: http, position: record.position)
    }
    guard !order.isEmpty else { return nil }
    var request = OTLPTraceRequest()
    for resource in order {
      var scopeSpans = OTLPScopeSpans()
      scopeSpans.scope = ProcessResource.scope
      scopeSpans.spans = spans[resource] ?? []
      var resourceSpans = OTLPResourceSpans()
      resourceSpans.resource = resource.otlp(serviceName: serviceName)
      resourceSpans.scopeSpans = [scopeSpans]
      request.resourceSpans.append(resourceSpans)
    }
    return request
  }
}
