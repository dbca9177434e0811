import NetMonitor

// TEMPORARY — delete this file when `main` (which adds these as stored fields of HTTPRecord) is
// merged. Until then the exporter compiles against the names, and they are all nil.
extension HTTPRecord {
  var role: ConnectionRole? { nil }
  var peerAddress: String? { nil }
  var peerPort: UInt16? { nil }
  var dnsMs: Double? { nil }
  var connectMs: Double? { nil }
  var tlsMs: Double? { nil }
  var tlsVersion: String? { nil }
}
