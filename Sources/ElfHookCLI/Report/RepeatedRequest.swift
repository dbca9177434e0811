import NetMonitor

/// The method, `Host` header, scheme and target of an HTTP request, and the rows of a summary's
/// host and endpoint tables it was counted in. A server's records mostly repeat the last one's
/// request, with the very same strings (a ring's consumer reuses them: `RecordTextCache`): then
/// the request is counted in the same rows, without making its keys, redacting or hashing again.
struct RepeatedRequest {
  private let method: String
  private let header: String?
  private let scheme: HTTPScheme
  private let target: String
  let hostRow: Int
  let endpointRow: Int

  init(_ http: HTTPRecord, hostRow: Int, endpointRow: Int) {
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
}
