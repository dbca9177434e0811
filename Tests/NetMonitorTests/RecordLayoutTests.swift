import CHTTP2
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

  @Test("an http record is three cache lines: its start, the connection's identity, the request")
  func httpRecordLines() {
    let record = MemoryLayout<RawRecord>.self
    let core = record.offset(of: \.core)!
    let identity = core + ConnectionCore.reusedCopyStart
    let request = record.offset(of: \.httpRequest)!
    #expect(RawRecord.slotSize % 64 == 0, "slots are whole lines")
    #expect(record.offset(of: \.httpResponseBytes)! + 8 <= 64, "the exchange's numbers in the first line")
    #expect(identity % 64 == 0 && request == identity + 64, "identity at \(identity), request at \(request)")
    // The identity is the core's last 64 bytes, and everything a reused connection's record reads
    // (id, role, TLS, peer, TLS version): the setup's times are before it.
    #expect(ConnectionCore.reusedCopyStart + 64 == MemoryLayout<ConnectionCore>.size)
    let coreLayout = MemoryLayout<ConnectionCore>.self
    for field in [coreLayout.offset(of: \.id)!, coreLayout.offset(of: \.role)!, coreLayout.offset(of: \.isTLS)!,
                  coreLayout.offset(of: \.peer)!, coreLayout.offset(of: \.tlsVersion)!] {
      #expect(field >= ConnectionCore.reusedCopyStart)
    }
    #expect(coreLayout.offset(of: \.tlsEnd)! < ConnectionCore.reusedCopyStart)
    // A new connection's record copies the setup too, but never the host, which comes first.
    #expect(ConnectionCore.httpCopyStart == MemoryLayout<FixedText<128>>.stride)
    // The request head's scalars and a short request's text in one line: 38 bytes of method,
    // target and Host together (`GET`, `/1k.bin` and `127.0.0.1:18082` are 25).
    #expect(MemoryLayout<HTTPHead>.offset(of: \.text)! + 38 <= 64)
  }

  @Test("an HTTP/2 stream's slot holds a request head (streams.c keeps its bytes, Swift writes them)")
  func streamHoldsAHead() {
    #expect(MemoryLayout<HTTPHead>.size <= Int(CH2_STREAM_HEAD_BYTES))
    #expect(MemoryLayout<HTTPHead>.alignment <= 8)
    #expect(MemoryLayout<ch2_stream>.offset(of: \.head)! % 8 == 0)
    #expect(MemoryLayout<ch2_stream>.stride % 8 == 0)
  }

  @Test("a head's method, target and Host are packed, and its readable bytes copied as one run")
  func packedText() {
    #expect(MemoryLayout<HTTPHead>.size - MemoryLayout<HTTPHead>.offset(of: \.text)! == HTTPHead.textCapacity)
    var parser = HTTPStreamParser()
    let request = Array("OPTIONS /a?b=c HTTP/1.1\r\nX: y\r\nHost:  h.example:81 \r\n\r\n".utf8)
    request.withUnsafeBytes { bytes in parser.feed(bytes, as: .requests) { _, _ in } }
    #expect(parser.head.methodString == "OPTIONS" && parser.head.targetString == "/a?b=c")
    #expect(parser.head.hostString == "h.example:81")
    let text = withUnsafeBytes(of: parser.head.text) { Array($0.prefix(25)) }
    #expect(text == Array("OPTIONS/a?b=ch.example:81".utf8))
    // A copy over garbage reads back the same.
    let copy = UnsafeMutablePointer<HTTPHead>.allocate(capacity: 1)
    defer { copy.deallocate() }
    UnsafeMutableRawPointer(copy).initializeMemory(as: UInt8.self, repeating: 0xEE, count: MemoryLayout<HTTPHead>.size)
    withUnsafePointer(to: parser.head) { HTTPHead.copyReadableBytes(from: $0, to: copy) }
    #expect(copy.pointee.methodString == "OPTIONS" && copy.pointee.targetString == "/a?b=c")
    #expect(copy.pointee.hostString == "h.example:81" && copy.pointee.requestKind == .ordinary)
    // Lengths past the capacities (a ring file written by anyone) are read within the text.
    copy.pointee.methodLength = 200
    copy.pointee.targetLength = 60_000
    copy.pointee.hostLength = 60_000
    let read = UnsafePointer(copy)
    #expect(read.methodBytes.count == HTTPHead.methodCapacity && read.targetBytes.count == HTTPHead.targetCapacity)
    #expect(read.textLength == HTTPHead.textCapacity)
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
