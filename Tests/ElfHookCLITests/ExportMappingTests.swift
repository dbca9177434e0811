import Foundation
import NetMonitor
import NetMonitorMetrics
import Testing
import TestSupport

@testable import ElfHookCLI

/// The record → OTLP mapping, without a collector: span attributes, ids, metrics.
@Suite("elfhook export: mapping")
struct ExportMappingTests {
  static func record(
    method: String = "GET", host: String? = "api.example.org:8443", target: String = "/v1/items?id=7",
    status: Int? = 200, start: UInt64 = 1_700_000_000_000_000_000, reused: Bool = true, connection: UInt64 = 3
  ) -> HTTPRecord {
    HTTPRecord(
      pid: 42, process: "curl", startUnixNs: start, durationMs: 12.5, connectionId: connection, scheme: .https,
      method: method, host: host, target: target, status: status, ttfbMs: 10, requestBytes: 120,
      responseBytes: 2048, reusedConnection: reused)
  }

  @Test("a client request: one CLIENT span named after the method, with the HTTP conventions' attributes")
  func clientSpan() throws {
    let spans = HTTPSpanMapping.spans(for: Self.record(), position: 0)
    let span = try #require(spans.first)
    #expect(spans.count == 1)
    #expect(span.name == "GET")
    #expect(span.kind == .client)
    #expect(span.startTimeUnixNano == 1_700_000_000_000_000_000)
    #expect(span.endTimeUnixNano == 1_700_000_000_012_500_000)
    #expect(span.status.code == .unset)
    var attributes: [String: AttributeValue] = [:]
    for keyValue in span.attributes {
      switch keyValue.value.value {
      case .stringValue(let text): attributes[keyValue.key] = .string(text)
      case .intValue(let number): attributes[keyValue.key] = .int(number)
      case .doubleValue(let number): attributes[keyValue.key] = .double(number)
      case .boolValue(let flag): attributes[keyValue.key] = .bool(flag)
      default: Issue.record("unexpected value for \(keyValue.key)")
      }
    }
    #expect(attributes["http.request.method"] == .string("GET"))
    #expect(attributes["url.full"] == .string("https://api.example.org:8443/v1/items?id=7"))
    #expect(attributes["server.address"] == .string("api.example.org"))
    #expect(attributes["server.port"] == .int(8443))
    #expect(attributes["http.response.status_code"] == .int(200))
    #expect(attributes["network.protocol.name"] == .string("http"))
    #expect(attributes["network.protocol.version"] == .string("1.1"))
    #expect(attributes["http.request.size"] == .int(120))
    #expect(attributes["http.response.size"] == .int(2048))
    #expect(attributes["elfhook.http.ttfb_ms"] == .double(10))
    #expect(attributes["error.type"] == nil)
  }

  @Test("a server exchange: SERVER span with url.path/url.query/client.address; a 404 is not its error")
  func serverSpan() throws {
    var record = Self.record(status: 404)
    record.role = .server
    record.peerAddress = "10.0.0.9"
    record.peerPort = 50_123
    let span = try #require(HTTPSpanMapping.spans(for: record, position: 0).first)
    #expect(span.kind == .server)
    #expect(span.status.code == .unset)
    let attributes = Dictionary(span.attributes.map { ($0.key, $0.value) }, uniquingKeysWith: { first, _ in first })
    #expect(attributes["url.path"]?.stringValue == "/v1/items")
    #expect(attributes["url.query"]?.stringValue == "id=7")
    #expect(attributes["url.scheme"]?.stringValue == "https")
    #expect(attributes["client.address"]?.stringValue == "10.0.0.9")
    #expect(attributes["network.peer.port"]?.intValue == 50_123)
    #expect(attributes["url.full"] == nil)
    #expect(attributes["error.type"] == nil)
    record.status = 503
    #expect(HTTPSpanMapping.spans(for: record, position: 0)[0].status.code == .error)
  }

  @Test("the first exchange of a connection: DNS lookup, socket connect, TLS handshake as children, end to end")
  func setupChildren() throws {
    var record = Self.record(reused: false)
    record.dnsMs = 1
    record.connectMs = 2
    record.tlsMs = 3
    record.tlsVersion = "TLSv1.3"
    record.peerAddress = "192.0.2.1"
    record.peerPort = 8443
    let spans = HTTPSpanMapping.spans(for: record, position: 0)
    #expect(spans.map(\.name) == ["GET", "DNS lookup", "socket connect", "TLS handshake"])
    let request = spans[0]
    #expect(request.startTimeUnixNano == record.startUnixNs - 6_000_000)
    #expect(spans.dropFirst().allSatisfy { $0.parentSpanID == request.spanID && $0.traceID == request.traceID })
    #expect(spans[1].startTimeUnixNano == request.startTimeUnixNano)
    #expect(spans[1].endTimeUnixNano == spans[2].startTimeUnixNano)
    #expect(spans[3].endTimeUnixNano == record.startUnixNs)
    #expect(Set(spans.map(\.spanID)).count == 4)
    #expect(spans[3].attributes.first { $0.key == "tls.protocol.version" }?.value.stringValue == "1.3")
    record.reusedConnection = true
    #expect(HTTPSpanMapping.spans(for: record, position: 0).count == 1)
  }

  @Test("errors: a client's 4xx, a missing response and one cut short are ERROR with error.type; an unknown method is _OTHER")
  func errors() throws {
    let notFound = try #require(HTTPSpanMapping.spans(for: Self.record(status: 404), position: 0).first)
    #expect(notFound.status.code == .error)
    #expect(notFound.attributes.first { $0.key == "error.type" }?.value.stringValue == "404")
    let none = try #require(HTTPSpanMapping.spans(for: Self.record(status: nil), position: 0).first)
    #expect(none.status.code == .error)
    #expect(none.attributes.first { $0.key == "error.type" }?.value.stringValue == "no_response")
    var cut = Self.record()
    cut.responseComplete = false
    let cutShort = try #require(HTTPSpanMapping.spans(for: cut, position: 0).first)
    #expect(cutShort.status.code == .error)
    #expect(cutShort.attributes.first { $0.key == "error.type" }?.value.stringValue == "incomplete_response")
    let other = try #require(HTTPSpanMapping.spans(for: Self.record(method: "PURGE"), position: 0).first)
    #expect(other.name == "_OTHER")
    #expect(other.attributes.first { $0.key == "http.request.method_original" }?.value.stringValue == "PURGE")
  }

  @Test("a failed gRPC call: an ERROR span whose message is the call's grpc-message, percent-decoded")
  func grpcStatusMessage() throws {
    var call = Self.record(target: "/test.Echo/Deny", status: 200)
    call.grpcStatus = 7
    call.grpcMessage = "nope: %C3%BCn%C3%AFcode / 100%25 %zz %4"
    let span = try #require(HTTPSpanMapping.spans(for: call, position: 0).first)
    #expect(span.name == "test.Echo/Deny" && span.status.code == .error)
    #expect(span.status.message == "nope: ünïcode / 100% %zz %4")
    call.grpcStatus = 0
    call.grpcMessage = "fine"
    #expect(HTTPSpanMapping.spans(for: call, position: 0)[0].status.message == "")
    #expect(GRPCCall.percentDecoded("%FF%41") == "\u{FFFD}A" && GRPCCall.percentDecoded("plain") == "plain")
  }

  @Test("ids are a function of the record and its position: stable, and distinct between records")
  func identity() throws {
    let first = HTTPSpanMapping.spans(for: Self.record(), position: 10)[0]
    let again = HTTPSpanMapping.spans(for: Self.record(), position: 10)[0]
    let elsewhere = HTTPSpanMapping.spans(for: Self.record(), position: 11)[0]
    #expect(first.traceID == again.traceID && first.spanID == again.spanID)
    #expect(first.traceID.count == 16 && first.spanID.count == 8)
    #expect(first.traceID != elsewhere.traceID && first.spanID != elsewhere.spanID)
    var seen = Set<Data>()
    for position in 0..<10_000 as Range<UInt64> {
      seen.insert(SpanIdentity(pid: 1, connectionId: 1, startUnixNs: 5, position: position).spanId("request"))
    }
    #expect(seen.count == 10_000)
  }

  @Test("Host headers split into server.address and server.port; OpenSSL's TLS names into the conventions'")
  func hostsAndTLS() {
    let named = MetricAttributes.hostAndPort("Example.org:8080")
    #expect(named.host == "example.org" && named.port == 8080)
    let literal = MetricAttributes.hostAndPort("[::1]:80")
    #expect(literal.host == "::1" && literal.port == 80)
    let bare = MetricAttributes.hostAndPort("example.org")
    #expect(bare.host == "example.org" && bare.port == nil)
    let tls13 = TLSVersionName("TLSv1.3")
    #expect(tls13.name == "tls" && tls13.version == "1.3")
    let tls10 = TLSVersionName("TLSv1")
    #expect(tls10.name == "tls" && tls10.version == "1.0")
  }

  @Test("histograms: OTLP's explicit buckets (upper bound inclusive), cumulative per attribute set")
  func histograms() throws {
    var metrics = ExportMetrics()
    for (index, status) in [200, 200, 404, 500].enumerated() {
      var record = Self.record(status: status, start: 1_000 + UInt64(index))
      record.durationMs = 100  // 0.1 s: exactly a boundary
      metrics.record(.http(record))
    }
    let request = metrics.request(serviceName: "svc", timeUnixNs: 9_999)
    let resource = try #require(request.resourceMetrics.first)
    #expect(resource.resource.attributes.first { $0.key == "service.name" }?.value.stringValue == "svc")
    let duration = try #require(resource.scopeMetrics[0].metrics.first { $0.name == "http.client.request.duration" })
    #expect(duration.unit == "s")
    #expect(duration.histogram.aggregationTemporality == .cumulative)
    let points = duration.histogram.dataPoints
    #expect(points.count == 3)  // 200, 404, 500
    #expect(points.map(\.count).reduce(0, +) == 4)
    let ok = try #require(points.first)
    #expect(ok.count == 2 && ok.startTimeUnixNano == 1_000 && ok.timeUnixNano == 9_999)
    #expect(ok.explicitBounds == ElfHookMetric.durationBucketsSeconds)
    let bucket = try #require(ElfHookMetric.durationBucketsSeconds.firstIndex(of: 0.1))
    #expect(ok.bucketCounts[bucket] == 2)
    // Persisted and read back, the streams go on.
    let decoded = try JSONDecoder().decode(ExportMetrics.self, from: JSONEncoder().encode(metrics))
    #expect(decoded.request(serviceName: nil, timeUnixNs: 9_999) == metrics.request(serviceName: nil, timeUnixNs: 9_999))
  }

  @Test("OTLP counts what MetricMapping measures, the mapping MetricsSink uses: every instrument, with its attributes")
  func oneMappingForEveryBackend() throws {
    var grpc = Self.record(target: "/test.Echo/Fail", status: 200, reused: false)
    grpc.grpcStatus = 5
    grpc.tlsMs = 4
    grpc.tlsVersion = "TLSv1"
    let refused = ConnectionRecord(
      pid: 42, process: "curl", startUnixNs: 1, durationMs: 1, id: 4, role: .client, transport: .tcp,
      host: "api.example.org", peerAddress: "192.0.2.1", peerPort: 8443, dnsMs: nil, connectMs: 1, tlsMs: nil,
      tlsVersion: nil, bytesSent: 0, bytesReceived: 0, tlsBytesSent: nil, tlsBytesReceived: nil, httpExchanges: 0,
      error: RecordedError(call: "connect", code: "ECONNREFUSED", message: "Connection refused"))
    let transactions = [Transaction.http(grpc), .connection(refused)]
    var metrics = ExportMetrics()
    transactions.forEach { metrics.record($0) }
    let sent = metrics.request(serviceName: nil, timeUnixNs: 2).resourceMetrics[0].scopeMetrics[0].metrics
    let measured = transactions.flatMap(MetricMapping.measurements(of:))
    #expect(Set(sent.map(\.name)) == Set(measured.map(\.metric.name)))
    for measurement in measured {
      let metric = try #require(sent.first { $0.name == measurement.metric.name })
      #expect(metric.unit == measurement.metric.unit)
      let expected = measurement.attributes.map { Attribute($0).otlp }
      let points =
        metric.histogram.dataPoints.map(\.attributes) + metric.sum.dataPoints.map(\.attributes)
      #expect(points.contains(expected), "\(measurement.metric)")
    }
    // The gRPC call's own duration, in ms; its failure is the error.type of the HTTP duration too.
    let rpc = try #require(sent.first { $0.name == "rpc.client.duration" })
    #expect(rpc.unit == "ms" && rpc.histogram.dataPoints.first?.sum == 12.5)
    let http = try #require(sent.first { $0.name == "http.client.request.duration" })
    #expect(http.histogram.dataPoints.first?.attributes.first { $0.key == "error.type" }?.value.stringValue == "5")
    let tls = try #require(sent.first { $0.name == "elfhook.connection.tls.duration" })
    #expect(tls.histogram.dataPoints.first?.attributes.first { $0.key == "tls.protocol.version" }?.value.stringValue == "1.0")
    // A failed connection: a monotonic sum, as Prometheus's elfhook_connection_errors_total.
    let errors = try #require(sent.first { $0.name == "elfhook.connection.errors" })
    #expect(errors.sum.isMonotonic && errors.sum.dataPoints.map(\.asInt) == [1])
  }

  @Test("a connection's phases count once: from its first exchange, else from its connection record")
  func phasesCountOnce() throws {
    var first = Self.record(reused: false)
    first.connectMs = 2
    first.peerPort = 8443
    let later = Self.record(start: 2_000_000_000_000_000_000)
    let withHTTP = ConnectionRecord(
      pid: 42, process: "curl", startUnixNs: 1, durationMs: 30, id: 3, role: .client, transport: .tcp,
      host: "api.example.org", peerAddress: "192.0.2.1", peerPort: 8443, dnsMs: nil, connectMs: 2, tlsMs: nil,
      tlsVersion: nil, bytesSent: 1, bytesReceived: 1, tlsBytesSent: nil, tlsBytesReceived: nil, httpExchanges: 2,
      error: nil)
    var refused = withHTTP
    refused.httpExchanges = 0
    refused.error = RecordedError(call: "connect", code: "ECONNREFUSED", message: "Connection refused")
    var metrics = ExportMetrics()
    for transaction in [Transaction.http(first), .http(later), .connection(withHTTP), .connection(refused)] {
      metrics.record(transaction)
    }
    let request = metrics.request(serviceName: nil, timeUnixNs: 1)
    let connect = try #require(request.resourceMetrics[0].scopeMetrics[0].metrics.first { $0.name == "elfhook.connection.connect.duration" })
    #expect(connect.histogram.dataPoints.map(\.count) == [1, 1])
    let refusedPoint = try #require(connect.histogram.dataPoints.last)
    #expect(refusedPoint.attributes.first { $0.key == "error.type" }?.value.stringValue == "ECONNREFUSED")
  }

  @Test("a JSON Lines source restarts from the start of a file that was replaced or truncated")
  func cursorRestarts() throws {
    let directory = try TemporaryDirectory("export-cursor")
    defer { directory.remove() }
    let line = Transaction.http(Self.record()).jsonLine()
    let path = try directory.write(line + "\n" + line + "\n", to: "r.jsonl")
    var messages: [String] = []
    let source = try JSONLinesSource(path: path, saved: nil) { messages.append($0) }
    let batch = try #require(try source.nextBatch(maxSpans: 512, atEnd: true))
    #expect(batch.records.count == 2)
    source.acknowledge(batch)
    #expect(try source.nextBatch(maxSpans: 512, atEnd: true) == nil)
    let saved = source.cursor
    // Resumed: nothing left.
    #expect(try JSONLinesSource(path: path, saved: saved) { messages.append($0) }.nextBatch(maxSpans: 512, atEnd: true) == nil)
    // Truncated to one line: exported from the start, with one message.
    _ = try directory.write(line + "\n", to: "r.jsonl.new")
    let truncated = try JSONLinesSource(path: path, saved: SourceCursor(
      device: saved.device, inode: saved.inode, offset: saved.offset + 1000, line: 2)) { messages.append($0) }
    #expect(try truncated.nextBatch(maxSpans: 512, atEnd: true)?.records.count == 2)
    #expect(messages.count == 1 && messages[0].contains("truncated"))
    // Replaced (another inode): exported from the start.
    try FileManager.default.removeItem(atPath: path)
    try FileManager.default.moveItem(atPath: path + ".new", toPath: path)
    let replaced = try JSONLinesSource(path: path, saved: saved) { messages.append($0) }
    #expect(try replaced.nextBatch(maxSpans: 512, atEnd: true)?.records.count == 1)
    #expect(messages.count == 2 && messages[1].contains("another inode"))
  }

  @Test("a followed file replaced under its name (rotation): the old one is finished, the new one read from its start")
  func rotation() throws {
    let directory = try TemporaryDirectory("export-rotation")
    defer { directory.remove() }
    let lines = (0..<3).map { Transaction.http(Self.record(start: UInt64($0))).jsonLine() }
    let path = try directory.write(lines[0] + "\n", to: "r.jsonl")
    var messages: [String] = []
    let source = try JSONLinesSource(path: path, saved: nil) { messages.append($0) }
    // Appended to the old file after the rename: still read, before the new file.
    try FileManager.default.moveItem(atPath: path, toPath: path + ".1")
    let old = try #require(FileHandle(forWritingAtPath: path + ".1"))
    old.seekToEndOfFile()
    old.write(Data((lines[1] + "\n").utf8))
    try old.close()
    _ = try directory.write(lines[2] + "\n", to: "r.jsonl")
    var starts: [UInt64] = []
    for _ in 0..<3 {
      if let batch = try source.nextBatch(maxSpans: 512, atEnd: false) {
        starts += batch.records.map(\.transaction.startUnixNs)
        source.acknowledge(batch)
      }
    }
    #expect(starts == [0, 1, 2])
    #expect(messages.count == 1 && messages[0].contains("replaced"))
  }

  @Test("batches hold at most 512 spans, and an incomplete last line waits when following")
  func batching() throws {
    let directory = try TemporaryDirectory("export-batch")
    defer { directory.remove() }
    let lines = (0..<1200).map { Transaction.http(Self.record(start: UInt64($0))).jsonLine() }
    let path = try directory.write(lines.joined(separator: "\n") + "\n" + lines[0].prefix(20), to: "r.jsonl")
    let source = try JSONLinesSource(path: path, saved: nil) { _ in }
    var sizes: [Int] = []
    while let batch = try source.nextBatch(maxSpans: 512, atEnd: false) {
      sizes.append(batch.spanCount)
      source.acknowledge(batch)
    }
    #expect(sizes == [512, 512, 176])
    #expect(source.cursor.line == 1200)
  }
}
