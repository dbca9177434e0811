import NetMonitor

/// Hand-built records for the endpoint and poller tests.
enum PrometheusSamples {
  static func http(status: Int? = 200, durationMs: Double = 40, host: String = "example.org") -> Transaction {
    .http(
      HTTPRecord(
        pid: 7, process: "curl", startUnixNs: 1_700_000_000_000_000_000, durationMs: durationMs, connectionId: 1,
        scheme: .https, method: "GET", host: host, target: "/a?token=secret", status: status, ttfbMs: 30,
        requestBytes: 80, responseBytes: 2_000, reusedConnection: true, role: .client, peerAddress: "192.0.2.1",
        peerPort: 443))
  }

  static func dns(error: RecordedError? = nil) -> Transaction {
    .dns(
      DNSRecord(
        pid: 7, process: "curl", startUnixNs: 1_700_000_000_000_000_000, durationMs: 2, host: "example.org",
        addresses: error == nil ? ["192.0.2.1"] : [], error: error))
  }
}
