import NetMonitor

/// The method, `Host` header, scheme and target of an HTTP request, and the rows of a summary's
/// host and endpoint tables it was counted in. A server's records mostly repeat the last one's
/// request, with the very same strings (a ring's consumer reuses them: `RecordTextCache`): then
/// the request is counted in the same rows, without making its keys, redacting or hashing again.
///
/// When the request was read from a ring's slot, its bytes are kept too (``bytes``): a record still
/// in its slot with the same bytes repeats the request, and is counted without being decoded.
struct RepeatedRequest {
  private let method: String
  private let header: String?
  private let scheme: HTTPScheme
  private let target: String
  let hostRow: Int
  let endpointRow: Int
  /// The bytes the strings above were decoded from, once ``capture(_:)`` took them; until then
  /// they match no record.
  private var bytes = HTTPRequestBytes()

  /// `bytes`: storage for ``capture(_:)`` to reuse (the last request's, forgotten).
  init(_ http: HTTPRecord, hostRow: Int, endpointRow: Int, bytes: HTTPRequestBytes = HTTPRequestBytes()) {
    self.bytes = bytes
    self.bytes.forget()
    method = http.method
    header = http.host
    scheme = http.scheme
    target = http.target
    self.hostRow = hostRow
    self.endpointRow = endpointRow
  }

  /// Whether `http` has the same method, `Host` header, scheme and target, so the same host and
  /// endpoint. Strings sharing their storage (or short ones, kept inline) compare without reading
  /// their bytes.
  func repeats(_ http: HTTPRecord) -> Bool {
    scheme == http.scheme && target == http.target && method == http.method && header == http.host
  }

  /// The rows to count `http` in, when it repeats this request.
  func rows(ifRepeatedBy http: HTTPRecord) -> (host: Int, endpoint: Int)? {
    repeats(http) ? (hostRow, endpointRow) : nil
  }

  /// Whether the record in a slot has the bytes this request was read from last: then it decodes
  /// to the same method, `Host`, scheme and target.
  func repeats(_ http: HTTPRecordView) -> Bool { bytes.matches(http) }

  /// Keeps the bytes of `http`, a record just counted as this request (`repeats` was true of its
  /// decoded record, or it made this one).
  mutating func capture(_ http: HTTPRecordView) { bytes.capture(http) }

  /// Hands the bytes' storage over to the request that replaces this one (a server whose every
  /// target differs makes one per record); this one's bytes match nothing after.
  mutating func takeBytes() -> HTTPRequestBytes {
    var taken = HTTPRequestBytes()
    swap(&taken, &bytes)
    return taken
  }
}
