import NetMonitor

/// Counters and durations of a group of HTTP requests: all of them, one host's, or one endpoint's.
struct RequestStats {
  private(set) var requests = 0
  /// Requests answered with a 5xx status, or not answered at all (see `HTTPRecord.isFailure`).
  private(set) var errors = 0
  /// Request bytes, head and body.
  private(set) var bytesSent: UInt64 = 0
  /// Response bytes, head and body.
  private(set) var bytesReceived: UInt64 = 0
  private(set) var durations = DurationSamples()

  mutating func add(_ http: HTTPRecord) {
    add(failed: http.isFailure, sent: http.requestBytes, received: http.responseBytes, durationMs: http.durationMs)
  }

  /// Counts the record in a ring slot as ``add(_:)-(HTTPRecord)`` counts it decoded; `failed` is
  /// its `isFailure`, asked once for every group it is counted in.
  mutating func add(_ http: HTTPRecordView, failed: Bool) {
    add(failed: failed, sent: http.requestBytes, received: http.responseBytes, durationMs: http.durationMs)
  }

  private mutating func add(failed: Bool, sent: UInt64, received: UInt64, durationMs: Double) {
    requests += 1
    if failed { errors += 1 }
    bytesSent += sent
    bytesReceived += received
    durations.add(durationMs)
  }

  /// Counts the repeats of a request that were counted from their ring slots, as if each had been
  /// added on its own.
  mutating func add(_ repeats: PendingRepeats) {
    requests += repeats.count
    errors += repeats.errors
    bytesSent += repeats.bytesSent
    bytesReceived += repeats.bytesReceived
    repeats.withDurations { durations.add(contentsOf: $0, maximum: repeats.maximumMs) }
  }
}

extension HTTPRecord {
  /// A server error (status 500 and above), no response at all (the connection failed or closed
  /// first), a response cut short, or a gRPC call that ended with any status but OK (as an
  /// OpenTelemetry client span counts it). 4xx statuses are the client's answer, not a failure
  /// of the exchange.
  var isFailure: Bool { Self.isFailure(status: status, responseComplete: responseComplete, grpcStatus: grpcStatus) }

  /// Whether an exchange that ended with `status` (`nil`: no response) failed: the one rule for
  /// a decoded record and for one still in its slot.
  static func isFailure(status: Int?, responseComplete: Bool?, grpcStatus: Int? = nil) -> Bool {
    responseComplete == false || (status.map { $0 >= 500 } ?? true) || (grpcStatus.map { $0 != 0 } ?? false)
  }

  /// The status as the reports show it: a gRPC call's by name (`NOT_FOUND`), else the HTTP status;
  /// `-` when no response came.
  var statusText: String { Self.statusText(status: status, grpcStatus: grpcStatus) }

  static func statusText(status: Int?, grpcStatus: Int?) -> String {
    grpcStatus.map(GRPCCall.statusName) ?? status.map(String.init) ?? "-"
  }
}

extension HTTPRecordView {
  /// ``HTTPRecord/isFailure`` of the record in the slot.
  var isFailure: Bool {
    HTTPRecord.isFailure(status: status, responseComplete: responseComplete, grpcStatus: grpcStatus)
  }
}
