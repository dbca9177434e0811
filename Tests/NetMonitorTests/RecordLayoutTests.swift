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

  /// The injected library writes connection and http records in C (cnm_record_layout.h): every
  /// field where Swift reads it.
  @Test("C's copy of the record layout has every field where Swift's has it")
  func cLayoutMatches() {
    typealias C = MemoryLayout<cnm_raw_record>
    typealias S = MemoryLayout<RawRecord>
    #expect(C.size == RawRecord.slotSize && S.size <= C.size)
    #expect(C.offset(of: \.kind) == S.offset(of: \.kind) && C.offset(of: \.pid) == S.offset(of: \.pid))
    #expect(C.offset(of: \.start_unix_ns) == S.offset(of: \.startUnixNanoseconds))
    #expect(C.offset(of: \.duration_ns) == S.offset(of: \.durationNanoseconds))
    #expect(C.offset(of: \.http_status) == S.offset(of: \.httpStatus))
    #expect(C.offset(of: \.http_reused) == S.offset(of: \.httpReused))
    #expect(C.offset(of: \.http_response_cut_short) == S.offset(of: \.httpResponseCutShort))
    #expect(C.offset(of: \.http_protocol) == S.offset(of: \.httpProtocol))
    #expect(C.offset(of: \.grpc_status) == S.offset(of: \.grpcStatus))
    #expect(C.offset(of: \.http_first_byte_ns) == S.offset(of: \.httpFirstByteNanoseconds))
    #expect(C.offset(of: \.http_request_bytes) == S.offset(of: \.httpRequestBytes))
    #expect(C.offset(of: \.http_response_bytes) == S.offset(of: \.httpResponseBytes))
    #expect(C.offset(of: \.core) == S.offset(of: \.core))
    #expect(C.offset(of: \.http_request) == S.offset(of: \.httpRequest))
    #expect(C.offset(of: \.stream_id) == S.offset(of: \.streamID))
    #expect(C.offset(of: \.target_is_huffman_code) == S.offset(of: \.targetIsHuffmanCode))
    #expect(C.offset(of: \.grpc_message) == S.offset(of: \.grpcMessage))

    typealias CC = MemoryLayout<cnm_connection_core>
    typealias SC = MemoryLayout<ConnectionCore>
    #expect(CC.size == SC.size)
    let core: [(Int?, Int?)] = [
      (CC.offset(of: \.host), SC.offset(of: \.host)), (CC.offset(of: \.dns_ns), SC.offset(of: \.dnsNanoseconds)),
      (CC.offset(of: \.start_unix_ns), SC.offset(of: \.startUnixNanoseconds)),
      (CC.offset(of: \.start_ns), SC.offset(of: \.startNanoseconds)),
      (CC.offset(of: \.connect_start), SC.offset(of: \.connectStart)),
      (CC.offset(of: \.connect_end), SC.offset(of: \.connectEnd)),
      (CC.offset(of: \.tls_start), SC.offset(of: \.tlsStart)), (CC.offset(of: \.tls_end), SC.offset(of: \.tlsEnd)),
      (CC.offset(of: \.bytes_sent), SC.offset(of: \.bytesSent)),
      (CC.offset(of: \.bytes_received), SC.offset(of: \.bytesReceived)),
      (CC.offset(of: \.tls_bytes_sent), SC.offset(of: \.tlsBytesSent)),
      (CC.offset(of: \.tls_bytes_received), SC.offset(of: \.tlsBytesReceived)),
      (CC.offset(of: \.http_exchanges), SC.offset(of: \.httpExchanges)),
      (CC.offset(of: \.error_call), SC.offset(of: \.errorCall)), (CC.offset(of: \.http_stop), SC.offset(of: \.httpStop)),
      (CC.offset(of: \.error_code), SC.offset(of: \.errorCode)), (CC.offset(of: \.tls_alpn), SC.offset(of: \.tlsALPN)),
      (CC.offset(of: \.id), SC.offset(of: \.id)), (CC.offset(of: \.fd), SC.offset(of: \.fd)),
      (CC.offset(of: \.role), SC.offset(of: \.role)), (CC.offset(of: \.transport), SC.offset(of: \.transport)),
      (CC.offset(of: \.phase), SC.offset(of: \.phase)), (CC.offset(of: \.is_tls), SC.offset(of: \.isTLS)),
      (CC.offset(of: \.has_dns), SC.offset(of: \.hasDNS)), (CC.offset(of: \.peer), SC.offset(of: \.peer)),
      (CC.offset(of: \.tls_version), SC.offset(of: \.tlsVersion)),
    ]
    for (index, (c, swift)) in core.enumerated() { #expect(c != nil && c == swift, "core field \(index)") }
    #expect(MemoryLayout<FixedText<128>>.size == MemoryLayout.size(ofValue: cnm_connection_core().host))
    #expect(MemoryLayout<FixedText<16>>.size == MemoryLayout.size(ofValue: cnm_connection_core().tls_version))
    #expect(UInt8(CNM_ROLE_CLIENT) == ConnectionCore.Role.client && UInt8(CNM_TRANSPORT_TCP) == ConnectionCore.Transport.tcp)
    #expect(UInt8(CNM_PHASE_ESTABLISHED) == ConnectionCore.Phase.established)
    #expect(UInt8(CNM_PHASE_FAILED) == ConnectionCore.Phase.failed)
    #expect(UInt8(CNM_ERROR_CALL_CONNECT) == HookedCall.connect.rawValue)
    #expect(UInt8(CNM_HTTP_11) == RawRecord.HTTPVersion.http11)
    let calls = [CNM_SSL_CALL_HANDSHAKE, CNM_SSL_CALL_READ, CNM_SSL_CALL_WRITE].map { UInt8($0) }
    #expect(TLSSession.Call.allCases.map(\.rawValue) == calls)

    typealias CH = MemoryLayout<cnm_http_head>
    typealias SH = MemoryLayout<HTTPHead>
    #expect(CH.offset(of: \.text)! + Int(CNM_HEAD_TEXT_CAPACITY) == SH.size)
    let head: [(Int?, Int?)] = [
      (CH.offset(of: \.content_length_value), SH.offset(of: \.contentLengthValue)),
      (CH.offset(of: \.status), SH.offset(of: \.status)), (CH.offset(of: \.target_length), SH.offset(of: \.targetLength)),
      (CH.offset(of: \.host_length), SH.offset(of: \.hostLength)),
      (CH.offset(of: \.method_length), SH.offset(of: \.methodLength)),
      (CH.offset(of: \.minor_version), SH.offset(of: \.minorVersion)),
      (CH.offset(of: \.target_truncated), SH.offset(of: \.targetTruncated)),
      (CH.offset(of: \.host_truncated), SH.offset(of: \.hostTruncated)),
      (CH.offset(of: \.has_content_length), SH.offset(of: \.hasContentLength)),
      (CH.offset(of: \.has_transfer_encoding), SH.offset(of: \.hasTransferEncoding)),
      (CH.offset(of: \.is_chunked), SH.offset(of: \.isChunked)),
      (CH.offset(of: \.connection_close), SH.offset(of: \.connectionClose)),
      (CH.offset(of: \.connection_keep_alive), SH.offset(of: \.connectionKeepAlive)),
      (CH.offset(of: \.connection_upgrade), SH.offset(of: \.connectionUpgrade)),
      (CH.offset(of: \.body_framing), SH.offset(of: \.bodyFraming)),
      (CH.offset(of: \.answered_request_kind), SH.offset(of: \.answeredRequestKind)),
      (CH.offset(of: \.text), SH.offset(of: \.text)),
    ]
    for (index, (c, swift)) in head.enumerated() { #expect(c != nil && c == swift, "head field \(index)") }
    // The scalars C writes for a simple request (cnm_replay_request_scalars) are compared with the
    // Swift parser's, byte for byte, on every head SimpleHeadsTests accepts.
    cnm_replay_fields_set_up()
    #expect(Int(cnm_replay_fields_in_use().scalars_length) == SH.offset(of: \.text)!)
    #expect(MemoryLayout<HTTPBodyFraming>.size == 1)
    #expect(unsafeBitCast(HTTPBodyFraming.contentLength, to: UInt8.self) == UInt8(CNM_BODY_CONTENT_LENGTH))
    #expect(unsafeBitCast(HTTPBodyFraming.none, to: UInt8.self) == UInt8(CNM_BODY_NONE))
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
    // The hooks' simple heads (simple_heads.c) hold what a head holds, and a template its text.
    #expect(Int(CNM_SIMPLE_TARGET_CAPACITY) == HTTPHead.targetCapacity && Int(CNM_SIMPLE_HOST_CAPACITY) == HTTPHead.hostCapacity)
    #expect(Int(CNM_SIMPLE_METHOD_CAPACITY) < HTTPHead.methodCapacity && Int(CNM_REPLAY_TEXT_CAPACITY) == HTTPHead.textCapacity)
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
