import CNetMonitor

/// The dns record as C writes it (`cnm_dns_record`, cnm_records.h): at a lookup, by the
/// getaddrinfo hook or by the injected library before the monitor is loaded.
extension cnm_dns_record {
  /// Calls `body` with the bytes of the name looked up.
  func withHost<Result>(_ body: (UnsafeRawBufferPointer) -> Result) -> Result {
    withUnsafeBytes(of: host) { raw in body(UnsafeRawBufferPointer(rebasing: raw.prefix(Int(host_length)))) }
  }

  /// Calls `body` with each distinct internet address among the answers.
  func forEachAddress(_ body: (PeerAddress) -> Void) {
    withUnsafeBytes(of: addresses) { raw in
      for address in raw.bindMemory(to: cnm_address.self).prefix(Int(address_count)) { body(PeerAddress(address)) }
    }
  }

  /// The record for the sinks. Allocates: recorder thread only.
  func dnsRecord(process: String) -> DNSRecord {
    var texts: [String] = []
    forEachAddress { address in if let text = address.text { texts.append(text) } }
    return DNSRecord(
      pid: pid, process: process, startUnixNs: start_unix_ns, durationMs: Double(duration_ns) / 1_000_000,
      host: withHost { String(decoding: $0, as: UTF8.self) }, addresses: texts,
      error: error == 0 ? nil : .addressInfo(error, systemErrno: system_errno == 0 ? nil : system_errno))
  }
}
