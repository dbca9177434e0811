import Foundation
import Testing
import TestSupport

/// `otlp_receiver.py` (beside this file), a collector stand-in built on the official OTLP protobuf
/// messages: what it received, read back from its JSON Lines output.
final class OTLPReceiver {
  let port: UInt16
  let output: URL
  private let server: TestProcess

  /// Whether python3 with `opentelemetry-proto` is here (scripts/install-dependencies installs it).
  static var isAvailable: Bool {
    (try? TestProcess.run(
      ["/usr/bin/env", "python3", "-c", "import opentelemetry.proto.collector.trace.v1.trace_service_pb2"],
      timeout: 30))?.status == 0
  }

  /// Starts a receiver on 127.0.0.1 (`port` 0: a free one) with the script's options
  /// (`--fail-first`, `--fail-seconds`, `--reject`, `--delay`), writing under `directory`.
  init(in directory: TemporaryDirectory, port: UInt16 = 0, options: [String] = []) throws {
    output = directory.url.appendingPathComponent("received-\(UUID().uuidString).jsonl")
    let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("otlp_receiver.py")
    let server = try TestProcess(
      ["/usr/bin/env", "python3", script.path, "--output", output.path, "--port", String(port)] + options)
    self.server = server
    var announced: UInt16?
    _ = eventually(timeout: 30) {
      announced = UInt16(server.stdout.trimmingCharacters(in: .whitespacesAndNewlines))
      return announced != nil || !server.process.isRunning
    }
    self.port = try #require(announced, "otlp_receiver.py did not start: \(server.stderr)")
  }

  deinit { stop() }

  var url: String { "http://127.0.0.1:\(port)" }

  func stop() {
    if server.process.isRunning {
      server.signal(SIGKILL)
      server.wait(timeout: 5)
    }
  }

  /// Every line it wrote, decoded.
  func events() -> [[String: Any]] {
    guard let text = try? String(contentsOf: output, encoding: .utf8) else { return [] }
    return text.split(separator: "\n").compactMap {
      try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
    }
  }

  /// The spans received, in order, duplicates included.
  func spans() -> [ReceivedSpan] { events().filter { $0["type"] as? String == "span" }.map(ReceivedSpan.init) }

  /// The metrics of the last metrics request: name → its data points.
  func lastMetrics() -> [String: [[String: Any]]] {
    guard let last = events().last(where: { $0["type"] as? String == "metrics" }),
      let metrics = last["metrics"] as? [[String: Any]]
    else { return [:] }
    var byName: [String: [[String: Any]]] = [:]
    for metric in metrics {
      byName[metric["name"] as? String ?? "", default: []] += metric["points"] as? [[String: Any]] ?? []
    }
    return byName
  }

  /// The total count of the histogram `name` in the last metrics request.
  func histogramCount(_ name: String) -> Int {
    (lastMetrics()[name] ?? []).reduce(0) { $0 + (($1["count"] as? Int) ?? 0) }
  }

  /// The statuses it answered, request by request.
  func answeredStatuses() -> [Int] {
    events().filter { $0["type"] as? String == "request" }.compactMap { $0["status"] as? Int }
  }
}

/// One span as the receiver decoded it.
struct ReceivedSpan {
  var traceId: String
  var spanId: String
  var parentSpanId: String
  var name: String
  /// OTLP's SpanKind: 1 internal, 2 server, 3 client.
  var kind: Int
  var start: UInt64
  var end: UInt64
  /// OTLP's status code: 0 unset, 1 ok, 2 error.
  var statusCode: Int
  var attributes: [String: Any]
  var resource: [String: Any]

  init(_ event: [String: Any]) {
    traceId = event["trace_id"] as? String ?? ""
    spanId = event["span_id"] as? String ?? ""
    parentSpanId = event["parent_span_id"] as? String ?? ""
    name = event["name"] as? String ?? ""
    kind = event["kind"] as? Int ?? 0
    start = (event["start"] as? NSNumber)?.uint64Value ?? 0
    end = (event["end"] as? NSNumber)?.uint64Value ?? 0
    statusCode = event["status_code"] as? Int ?? 0
    attributes = event["attributes"] as? [String: Any] ?? [:]
    resource = event["resource"] as? [String: Any] ?? [:]
  }

  func string(_ key: String) -> String? { attributes[key] as? String }
  func int(_ key: String) -> Int? { attributes[key] as? Int }
}
