import NetMonitor

/// Hand-built records for the mapping tests: every field set as the recorder would.
enum RecordSamples {
  static func http(
    method: String = "GET", host: String? = "Example.org", status: Int? = 200,
    scheme: HTTPScheme = .https, durationMs: Double = 120, ttfbMs: Double? = 80,
    requestBytes: UInt64 = 95, responseBytes: UInt64 = 1_256, connectionId: UInt64 = 1,
    role: ConnectionRole? = .client, reused: Bool = true, connectMs: Double? = nil, tlsMs: Double? = nil,
    responseComplete: Bool? = nil
  ) -> Transaction {
    .http(
      HTTPRecord(
        pid: 42, process: "curl", startUnixNs: 1_700_000_000_000_000_000, durationMs: durationMs,
        connectionId: connectionId, scheme: scheme, method: method, host: host,
        target: "/users/123?token=secret", status: status, ttfbMs: ttfbMs,
        requestBytes: requestBytes, responseBytes: responseBytes, responseComplete: responseComplete,
        reusedConnection: reused, role: role,
        peerAddress: "192.0.2.1", peerPort: 443, tlsVersion: scheme == .https ? "TLSv1.3" : nil,
        dnsMs: reused ? nil : 3.5, connectMs: connectMs, tlsMs: tlsMs))
  }

  static func dns(durationMs: Double = 3.5, error: RecordedError? = nil) -> Transaction {
    .dns(
      DNSRecord(
        pid: 42, process: "curl", startUnixNs: 1_700_000_000_000_000_000, durationMs: durationMs,
        host: "example.org", addresses: error == nil ? ["192.0.2.1"] : [], error: error))
  }

  static func connection(
    role: ConnectionRole = .client, host: String? = "example.org", peerAddress: String? = "192.0.2.1",
    peerPort: UInt16? = 443, connectMs: Double? = 10, tlsMs: Double? = 30, tlsVersion: String? = "TLSv1.3",
    httpExchanges: Int? = 0, error: RecordedError? = nil
  ) -> Transaction {
    .connection(
      ConnectionRecord(
        pid: 42, process: "curl", startUnixNs: 1_700_000_000_000_000_000, durationMs: 500, id: 1,
        role: role, transport: .tcp, host: host, peerAddress: peerAddress, peerPort: peerPort,
        dnsMs: 3.5, connectMs: connectMs, tlsMs: tlsMs, tlsVersion: tlsVersion,
        bytesSent: 600, bytesReceived: 5_000, httpExchanges: httpExchanges, error: error))
  }
}
