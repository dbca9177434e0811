import Foundation
import NIOCore
import NetMonitor
import SwiftProtobuf

#if canImport(Glibc)
  import Glibc
#endif

/// The store-and-forward loop of `elfhook export --otlp`: read a batch after the cursor, send it,
/// and only once the collector answered 2xx, count it in the metrics, move the cursor, persist
/// both atomically, and (for a ring) free the slots. A crash at any point leaves a state from
/// which the next run sends exactly what was not acknowledged — with the same span ids.
///
/// Without `follow`: every record the files hold is sent, then the metrics; a collector that
/// stays unreachable for ``ExportConfiguration/attempts`` attempts is a ``CommandFailure``
/// (`cannot reach the collector at URL: …`). With `follow`: the files are polled every
/// ``ExportConfiguration/pollInterval``, outages are waited out with exponential backoff (100 ms
/// doubling to ``ExportConfiguration/backoffCap``), the metrics go out every
/// ``ExportConfiguration/metricsInterval``, and SIGINT/SIGTERM end the loop with the state saved.
///
/// Without `follow`, SIGINT/SIGTERM end the run too, between two steps, with status 1.
///
/// A batch the collector rejects (a 4xx other than 429) is logged in one line and passed over:
/// sending it again would be refused again. Without `follow`, the run then ends with status 1.
///
/// With ``ExportConfiguration/jsonLinesPath``, batches are appended to that file instead
/// (``JSONLinesDestination``), with the same cursors; no metrics are kept.
///
/// The files are read through a ``RecordFollower``: a directory among the record paths is
/// watched for rings, and a ring there whose process has exited is exported to its end, then
/// removed, and its cursor forgotten. A line that is not a record is reported and skipped;
/// without `follow`, the run then ends with status 1.
final class ExportSession {
  let configuration: ExportConfiguration
  private let client: OTLPClient?
  private let log: (String) -> Void
  private var state = ExportState()
  private var rejectedRecords = 0
  private var metricsSent = false
  private var output: JSONLinesDestination?

  /// A session; nothing is opened or sent before ``run()``.
  init(configuration: ExportConfiguration, log: @escaping (String) -> Void) {
    self.configuration = configuration
    self.log = log
    client =
      configuration.jsonLinesPath != nil
      ? nil
      : OTLPClient(
        baseURL: configuration.collectorURL,
        requestTimeout: .milliseconds(Int64(configuration.requestTimeout * 1000)))
  }

  /// Runs the export to its end (see the type's summary).
  ///
  /// - Throws: `CommandFailure` (one line for the user) or `RecordFileError`.
  func run() throws {
    let store = try ExportStateStore(directory: configuration.stateDirectory)
    state = try store.load()
    if let path = configuration.jsonLinesPath {
      let destination = try JSONLinesDestination(path: path, saved: state.jsonLinesOutput)
      state.jsonLinesOutput = destination.cursor
      output = destination
    }
    let follower = try RecordFollower(paths: configuration.recordPaths, saved: state.cursors, log: log)
    for entry in follower.entries { state.cursors[entry.key] = entry.source.cursor }
    try store.save(state)

    var lastMetrics = Self.now()
    while !StopSignal.isRequested {
      for entry in try follower.discoverRings(saved: state.cursors) { state.cursors[entry.key] = entry.source.cursor }
      let pass = try follower.pass(atEnd: !configuration.follow) { batch, entry in
        guard try deliver(batch, from: entry.source) else { return false }
        state.cursors[entry.key] = entry.source.cursor
        if let output { state.jsonLinesOutput = output.cursor }
        try store.save(state)
        entry.source.didPersist(batch)
        metricsSent = false
        return true
      }
      if !pass.removed.isEmpty {
        for key in pass.removed { state.cursors[key] = nil }
        try store.save(state)
      }
      guard configuration.follow || pass.skippedUnfinished else { break }
      if Double(Self.now() &- lastMetrics) / 1e9 >= configuration.metricsInterval {
        exportMetricsOnce()
        lastMetrics = Self.now()
      }
      if !pass.progressed { StopSignal.sleep(configuration.pollInterval) }
    }
    try finish(skippedLines: follower.skippedLines)
  }

  /// After the loop: the last metrics, and how the run ends — status 1 (a `CommandFailure`)
  /// without `follow` when it was interrupted, or records were rejected or skipped.
  private func finish(skippedLines: Int) throws {
    if client == nil {
      if StopSignal.isRequested && !configuration.follow {
        throw CommandFailure.input("interrupted; what was written is saved, run the same command to go on")
      }
    } else if configuration.follow {
      if !metricsSent { exportMetricsOnce() }
    } else if StopSignal.isRequested {
      throw CommandFailure.input("interrupted; what the collector acknowledged is saved, run the same command to go on")
    } else if !state.metrics.isEmpty, !StopSignal.isRequested {
      let outcome = try send("v1/metrics", body: try metricsRequest().serializedBytes())
      if case .rejected(let reason) = outcome {
        throw CommandFailure.input("the collector at \(configuration.collectorURL) rejected the metrics: \(reason)")
      }
    }
    if rejectedRecords > 0 && !configuration.follow {
      throw CommandFailure.input(
        "the collector at \(configuration.collectorURL) rejected \(rejectedRecords) records (see above)")
    }
    if skippedLines > 0 && !configuration.follow {
      let lines =
        skippedLines == 1
        ? "1 line of the record files was not a record" : "\(skippedLines) lines of the record files were not records"
      throw CommandFailure.input("\(lines), skipped (see above)")
    }
  }

  /// Delivers `batch` (see ``deliverToCollector(_:from:)``), or with `--jsonl`, appends it to the
  /// file and moves the source's cursor.
  private func deliver(_ batch: SourceBatch, from source: any RecordSource) throws -> Bool {
    guard let output else { return try deliverToCollector(batch, from: source) }
    try output.append(batch.records)
    source.acknowledge(batch)
    return true
  }

  /// Sends `batch`'s spans and, once they are acknowledged (or rejected for good), counts the
  /// batch in the metrics and moves the source's cursor. Returns `false` when a stop was
  /// requested before the collector acknowledged it (nothing moved).
  private func deliverToCollector(_ batch: SourceBatch, from source: any RecordSource) throws -> Bool {
    if let request = TraceBatch.request(for: batch.records, serviceName: configuration.serviceName) {
      guard let outcome = try send("v1/traces", body: try request.serializedBytes()) else { return false }
      switch outcome {
      case .accepted(let body):
        if let response = try? OTLPTraceResponse(serializedBytes: body), response.partialSuccess.rejectedSpans > 0 {
          log(
            "the collector at \(configuration.collectorURL) dropped \(response.partialSuccess.rejectedSpans) spans "
              + "from \(source.path): \(response.partialSuccess.errorMessage)")
        }
      case .rejected(let reason):
        rejectedRecords += batch.records.count
        log(
          "the collector at \(configuration.collectorURL) rejected \(batch.spanCount) spans from \(source.path) "
            + "(\(reason)); skipping them")
      case .retryable: break
      }
    }
    for record in batch.records { state.metrics.record(record.transaction) }
    source.acknowledge(batch)
    return true
  }

  /// POSTs `body` until the collector accepts or rejects it. Returns `nil` when a stop was
  /// requested while waiting to retry.
  ///
  /// - Throws: without `follow`, `CommandFailure` after the last attempt failed.
  private func send(_ path: String, body: [UInt8]) throws -> OTLPSendOutcome? {
    var backoff = Backoff(cap: configuration.backoffCap)
    var attempt = 0
    var announced = false
    while true {
      attempt += 1
      let outcome = client!.post(path, body: body)
      guard case .retryable(let reason) = outcome else {
        if announced { log("the collector at \(configuration.collectorURL) answers again; sending") }
        return outcome
      }
      if !configuration.follow && attempt >= configuration.attempts {
        throw CommandFailure.input("cannot reach the collector at \(configuration.collectorURL): \(reason)")
      }
      if configuration.follow && !announced {
        log("the collector at \(configuration.collectorURL) is unavailable (\(reason)); the records wait, retrying")
        announced = true
      }
      if StopSignal.sleep(backoff.delay()) { return nil }
    }
  }

  /// One attempt at exporting the metrics (`--follow`: the next interval tries again).
  private func exportMetricsOnce() {
    guard let client, !state.metrics.isEmpty, let body = try? metricsRequest().serializedBytes() as [UInt8] else { return }
    switch client.post("v1/metrics", body: body) {
    case .accepted: metricsSent = true
    case .rejected(let reason): log("the collector at \(configuration.collectorURL) rejected the metrics: \(reason)")
    case .retryable: break
    }
  }

  private func metricsRequest() -> OTLPMetricsRequest {
    state.metrics.request(serviceName: configuration.serviceName, timeUnixNs: Self.now())
  }

  /// Now, in nanoseconds since the Unix epoch. The corresponding C function is `clock_gettime`.
  static func now() -> UInt64 {
    var time = timespec()
    clock_gettime(CLOCK_REALTIME, &time)
    return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
  }
}
