import CNetMonitor
import Glibc
import Testing

@testable import NetMonitor

/// Records are written into fixed-size queue and ring slots, by Swift (connection and http) and by
/// C (dns, also from the injected library before the monitor is loaded): both must agree on the
/// slot and on the first fields every record starts with.
@Suite("Record layout")
struct RecordLayoutTests {
  @Test("every record fits a slot, and starts with its kind and the pid, in C and in Swift alike")
  func recordsShareTheirStart() {
    #expect(MemoryLayout<RawRecord>.stride <= RawRecord.slotSize)
    #expect(MemoryLayout<cnm_dns_record>.size <= RawRecord.slotSize)
    #expect(MemoryLayout<RawRecord>.offset(of: \.kind) == MemoryLayout<cnm_dns_record>.offset(of: \.kind))
    #expect(MemoryLayout<RawRecord>.offset(of: \.pid) == MemoryLayout<cnm_dns_record>.offset(of: \.pid))
    #expect(MemoryLayout<cnm_address>.size == MemoryLayout<PeerAddress>.size)
  }

  @Test("an http record's fields come first: few cache lines for the hooks to write, the consumer to read")
  func httpFieldsFirst() {
    let core = MemoryLayout<RawRecord>.offset(of: \.core)!
    let head = MemoryLayout<RawRecord>.offset(of: \.httpRequest)!
    #expect(MemoryLayout<RawRecord>.offset(of: \.httpResponseBytes)! + 8 <= core && core <= 64)
    #expect(ConnectionCore.scalarBytes == MemoryLayout<ConnectionCore>.size - MemoryLayout<FixedText<128>>.size)
    // Record start, the connection's scalars, the head's scalars and method: five lines of 64 bytes.
    #expect(head - core - ConnectionCore.scalarBytes == MemoryLayout<FixedText<128>>.stride)
    #expect(core + ConnectionCore.scalarBytes <= 4 * 64, "scalars end at \(core + ConnectionCore.scalarBytes)")
    // A reused connection's record copies only the core's start (`reusedBytes`): everything its
    // reader reads then (id, role, TLS, peer, TLS version) must be in it, and the setup's times not.
    let reused = ConnectionCore.reusedBytes
    #expect(MemoryLayout<ConnectionCore>.offset(of: \.role)! < reused && MemoryLayout<ConnectionCore>.offset(of: \.isTLS)! < reused)
    #expect(MemoryLayout<ConnectionCore>.offset(of: \.peer)! + MemoryLayout<PeerAddress>.size <= reused)
    #expect(MemoryLayout<ConnectionCore>.offset(of: \.tlsVersion)! + MemoryLayout<FixedText<16>>.size <= reused)
    #expect(MemoryLayout<ConnectionCore>.offset(of: \.connectStart)! >= reused)
    #expect(core + reused <= 2 * 64, "a reused connection's part ends at \(core + reused)")
  }

  @Test("a dns record written in C reads back as the lookup it was")
  func dnsRecordRoundTrip() throws {
    var answers: UnsafeMutablePointer<addrinfo>?
    var hints = addrinfo()
    hints.ai_family = AF_INET
    hints.ai_flags = AI_NUMERICHOST
    #expect(getaddrinfo("127.0.0.1", "80", &hints, &answers) == 0)
    defer { freeaddrinfo(answers) }
    var record = cnm_dns_record()
    cnm_dns_record_fill(&record, "example.test", 0, 0, answers, 1_700_000_000_000_000_000, 1_500_000)
    let queue = try #require(cnm_queue_create(4, RawRecord.slotSize))
    #expect(cnm_dns_record_emit(queue, &record))
    let slot = try #require(cnm_queue_peek(queue))
    var cache = RecordTextCache()
    guard case .dns(let dns)? = RawRecord.transaction(at: slot, process: "test", cache: &cache) else {
      Issue.record("not a dns record")
      return
    }
    #expect(dns.host == "example.test" && dns.addresses == ["127.0.0.1"] && dns.durationMs == 1.5)
    #expect(dns.startUnixNs == 1_700_000_000_000_000_000 && dns.error == nil)
  }
}
