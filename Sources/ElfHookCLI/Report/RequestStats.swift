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
    add(durationMs: http.durationMs, isFailure: http.isFailure, sent: http.requestBytes, received: http.responseBytes)
  }

  /// Counts a request from its numbers: an ``HTTPRecord``'s, or those of a record still in its
  /// ring slot (``HTTPRecordView``), which is counted without being decoded.
  mutating func add(durationMs: Double, isFailure: Bool, sent: UInt64, received: UInt64) {
    requests += 1
    if isFailure { errors += 1 }
    bytesSent += sent
    bytesReceived += received
    durations.add(durationMs)
  }
}

extension HTTPRecord {
  /// A server error (status 500 and above) or no response at all (the connection failed or closed
  /// first). 4xx statuses are the client's answer, not a failure of the exchange.
  var isFailure: Bool { status.map { $0 >= 500 } ?? true }
}

extension HTTPRecordView {
  /// ``HTTPRecord/isFailure`` of the record in the slot.
  var isFailure: Bool { status.map { $0 >= 500 } ?? true }
}
