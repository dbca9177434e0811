import CHTTP2
import CNetMonitor

/// What the recorder does with an HTTP/2 stream that streams.c follows: take its request head
/// (method, path as the target, :authority as the host) from the header block that opened it, and
/// write its http record once it ended. streams.c calls these (``callbacks``) with the
/// connection's table slot as its context. Nothing here allocates, locks or does I/O.
enum H2Streams {
  /// What every connection's streams.c calls (`ch2_connection_start` keeps the pointer): made once,
  /// when the connection table is set up (``install()``), never in a hook.
  nonisolated(unsafe) static let callbacks: UnsafePointer<ch2_stream_callbacks> = {
    let callbacks = UnsafeMutablePointer<ch2_stream_callbacks>.allocate(capacity: 1)
    callbacks.initialize(
      to: ch2_stream_callbacks(
        take_request_head: { context, _, stream, fields in
          let slot = context!.assumingMemoryBound(to: ConnectionSlot.self)
          H2Streams.takeRequestHead(stream!, from: fields!, context: Traffic.exchangeContext(slot))
        },
        record: { context, connection, stream, id, now in
          let slot = context!.assumingMemoryBound(to: ConnectionSlot.self)
          H2Streams.record(connection!, stream!, id: id, now: now, context: Traffic.exchangeContext(slot))
        },
        more_slots: cnm_h2_more_stream_slots))
    return UnsafePointer(callbacks)
  }()

  /// Makes ``callbacks`` before any connection is read.
  static func install() { _ = callbacks }

  /// The request head kept in `stream` (its layout is ``HTTPHead``'s; `RecordLayoutTests` checks
  /// that it fits `CH2_STREAM_HEAD_BYTES`).
  @inline(__always)
  static func head(of stream: UnsafeMutablePointer<ch2_stream>) -> UnsafeMutablePointer<HTTPHead> {
    ch2_stream_head(stream).bindMemory(to: HTTPHead.self, capacity: 1)
  }

  /// The request's method, path (as the target; :authority for CONNECT) and :authority (as the
  /// host), from its decoded header block; the connection's first request may name its server.
  static func takeRequestHead(
    _ stream: UnsafeMutablePointer<ch2_stream>, from fields: UnsafePointer<ch2_fields>, context: ExchangeContext
  ) {
    let head = head(of: stream)
    head.pointee.clearScalars()
    let raw = UnsafeRawPointer(fields)
    let method = UnsafeRawBufferPointer(
      start: raw + MemoryLayout<ch2_fields>.offset(of: \.method)!, count: Int(fields.pointee.method_length))
    let path = UnsafeRawBufferPointer(
      start: raw + MemoryLayout<ch2_fields>.offset(of: \.path)!, count: Int(fields.pointee.path_length))
    let authority = UnsafeRawBufferPointer(
      start: raw + MemoryLayout<ch2_fields>.offset(of: \.authority)!, count: Int(fields.pointee.authority_length))
    head.pointee.appendMethod(method)
    head.pointee.appendTarget(path.isEmpty ? authority : path)
    if fields.pointee.path_truncated != 0 { head.pointee.targetTruncated = true }
    _ = head.pointee.appendHost(authority)
    if fields.pointee.authority_truncated != 0 { head.pointee.hostTruncated = true }
    head.pointee.minorVersion = 0
    let huffman = fields.pointee.path_huffman != 0 && !path.isEmpty
    stream.pointee.head_target_huffman = huffman ? 1 : 0
    stream.pointee.has_head = 1
    let core = context.core
    if stream.pointee.ordinal == 0, core.pointee.role == ConnectionCore.Role.client, core.pointee.host.isEmpty {
      let read = UnsafePointer(head)
      let targetIsPath = huffman ? beginsWithSlash(code: path) : read.targetBytes.first == UInt8(ascii: "/")
      guard
        let name = HostHeaderName.serverName(
          host: read.hostBytes, targetIsPath: targetIsPath, peerPort: core.pointee.peer.port, isTLS: context.isTLS)
      else { return }
      core.pointee.host = FixedText(name)
    }
  }

  /// Whether the Huffman code `code` decodes to text that begins with `/` (code 011000, RFC 7541
  /// Appendix B: the code is canonical, so its first six bits say).
  @inline(__always)
  static func beginsWithSlash(code: UnsafeRawBufferPointer) -> Bool {
    guard let first = code.first else { return false }
    return first >> 2 == 0b01_1000
  }

  /// Stream `id`, both halves ended, becomes a record.
  static func record(
    _ connection: UnsafeMutablePointer<H2Connection>, _ stream: UnsafeMutablePointer<ch2_stream>, id: UInt32,
    now: UInt64, context: ExchangeContext
  ) {
    let tag = ch2_stream_tag(connection, id)
    let hasRequest = stream.pointee.request_tag == tag
    let hasResponse = stream.pointee.response_tag == tag
    let firstByte = hasResponse ? stream.pointee.first_byte : 0
    let responseStart = firstByte == 0 ? now : firstByte
    let start = hasRequest && stream.pointee.start != 0 ? Swift.min(stream.pointee.start, responseStart) : responseStart
    let reused = hasRequest ? stream.pointee.ordinal > 0 : id > 1
    let status = hasResponse ? stream.pointee.status : 0
    RawRecord.emit { record in  // every field an http record reads (see `RawRecord.emit`)
      record.pointee.kind = RawRecord.Kind.http
      record.pointee.startUnixNanoseconds =
        context.core.pointee.startUnixNanoseconds &+ (start &- context.core.pointee.startNanoseconds)
      record.pointee.durationNanoseconds = now &- start
      let copyStart = reused ? ConnectionCore.reusedCopyStart : ConnectionCore.httpCopyStart
      (UnsafeMutableRawPointer(record.pointer(to: \.core)!) + copyStart).copyMemory(
        from: UnsafeRawPointer(context.core) + copyStart, byteCount: MemoryLayout<ConnectionCore>.size &- copyStart)
      record.pointee.core.isTLS = context.isTLS ? 1 : 0
      if hasRequest && stream.pointee.has_head != 0 {
        HTTPHead.copyReadableBytes(from: head(of: stream), to: record.pointer(to: \.httpRequest)!)
        record.pointee.targetIsHuffmanCode = stream.pointee.head_target_huffman != 0
      } else {
        record.pointee.httpRequest.clearScalars()
        record.pointee.targetIsHuffmanCode = false
      }
      record.pointee.httpStatus = status
      record.pointee.httpResponseCutShort = !(hasResponse && stream.pointee.response_complete != 0)
      record.pointee.httpFirstByteNanoseconds = firstByte == 0 ? 0 : firstByte &- start &+ 1
      record.pointee.httpRequestBytes = hasRequest ? stream.pointee.request_bytes : 0
      record.pointee.httpResponseBytes = hasResponse ? stream.pointee.response_bytes : 0
      record.pointee.httpReused = reused
      record.pointee.httpProtocol = RawRecord.HTTPVersion.h2
      record.pointee.streamID = id
      record.pointee.grpcStatus = ch2_stream_grpc_status(stream, hasRequest ? 1 : 0, hasResponse ? 1 : 0)
      if hasResponse && stream.pointee.grpc_status >= 0 {
        record.pointee.grpcMessage = FixedText(
          UnsafeRawBufferPointer(
            start: UnsafeRawPointer(stream) + MemoryLayout<ch2_stream>.offset(of: \.grpc_message)!,
            count: Int(stream.pointee.grpc_message_length)))
      }
    }
  }
}

extension UnsafeMutablePointer where Pointee == HTTPExchanges {
  /// The connection switched to HTTP/2 after an HTTP/1.1 request asking for it (`Upgrade: h2c`),
  /// answered by 101: that request is stream 1's, whose response comes in HTTP/2 frames. (The
  /// 101 exchange itself is recorded as the HTTP/1.1 exchange it was.)
  func upgraded(to connection: UnsafeMutablePointer<H2Connection>, context: ExchangeContext) {
    guard pointee.requestsBegun > 0 else { return }
    let tag = ch2_stream_tag(connection, 1)
    guard let stream = ch2_stream_open(connection, 1), ch2_stream_claim_request_half(stream, tag) != 0 else { return }
    stream.pointee.start = element(\.requestHalves, pointee.requestsBegun &- 1).pointee.start
    // Not the connection's first exchange: the 101 was (and carries the connection's setup).
    stream.pointee.ordinal = cnm_increment_u32(connection.pointer(to: \.streams_opened)!) &+ 1
    HTTPHead.copyReadableBytes(from: pointer(to: \.requests.head)!, to: H2Streams.head(of: stream))
    stream.pointee.head_target_huffman = 0
    stream.pointee.has_head = 1
    if ch2_stream_end(stream, UInt64(CH2_REQUEST_ENDED), tag) != 0 {  // its response came first
      connection.pointee.recorded_by_requests &+= 1
      H2Streams.record(connection, stream, id: 1, now: MonotonicClock.now(), context: context)
      ch2_stream_release(connection, 1)
    }
  }
}
