import CHTTP2
import CNetMonitor

/// The streams of an HTTP/2 connection, read from its frames: each frame that ends is handed here
/// with the direction that carried it, and each stream becomes one http record when both of its
/// halves ended (END_STREAM each way), when it is reset (RST_STREAM), refused (GOAWAY), or when the
/// connection closes. Nothing here allocates, locks or does I/O.
extension UnsafeMutablePointer where Pointee == H2Connection {
  /// A frame of the request direction (`requests`) or the response direction ended. Returns the
  /// status that stops the direction (a header block that does not decode), or `CH2_OK`.
  func frameEnded(_ event: ch2_event, requests: Bool, now: UInt64, context: ExchangeContext) -> ch2_status {
    let direction = self.direction(requests: requests)
    // Every header block is decoded, whatever its stream: the table must stay the encoder's.
    if event.has_block != 0 {
      let block = ch2_reader_block(direction.pointer(to: \.reader)!)
      let status = ch2_hpack_decode(
        direction.pointer(to: \.decoder)!, block, Int(direction.pointee.reader.block_length),
        direction.pointer(to: \.fields)!)
      guard status == CH2_OK else { return status }
    }
    let id = event.stream_id
    if id == 0 {
      connectionFrame(event, requests: requests, now: now, context: context)
    } else if requests {
      requestFrame(event, id, now: now, context: context)
    } else {
      responseFrame(event, id, now: now, context: context)
    }
    return CH2_OK
  }

  /// SETTINGS and GOAWAY (PING and WINDOW_UPDATE on stream 0 say nothing a record needs). Out of
  /// line: a connection's frames are few beside its streams'.
  @inline(never)
  private func connectionFrame(_ event: ch2_event, requests: Bool, now: UInt64, context: ExchangeContext) {
    switch Int32(event.type) {
    case Int32(CH2_SETTINGS):
      // The sender's decoder allows the other direction's encoder a table this large: only ever
      // raised here, so that blocks sent before the sender's setting was acknowledged still read.
      if event.header_table_size != UInt32.max {
        let decoder = self.direction(requests: !requests).pointer(to: \.decoder)!
        if event.header_table_size > decoder.pointee.limit { ch2_hpack_set_limit(decoder, event.header_table_size) }
      }
    case Int32(CH2_GOAWAY):
      // The streams the other side opened past the last one the sender processed never will be.
      endStreams(after: event.last_stream_id, openedByClient: !requests, now: now, context: context)
    default:
      break
    }
  }

  private func requestFrame(_ event: ch2_event, _ id: UInt32, now: UInt64, context: ExchangeContext) {
    let stream = streamSlot(id)
    let tag = self.tag(id)
    if stream.pointee.requestTag != tag {
      // Only HEADERS opens a stream: a PRIORITY frame for an idle stream (nghttp's anchors) or a
      // WINDOW_UPDATE after the end opens nothing.
      guard event.type == UInt8(CH2_HEADERS), stream.claimRequestHalf(tag) else { return }
      stream.pointee.start = now
      stream.pointee.ordinal = cnm_increment_u32(pointer(to: \.streamsOpened)!)
    } else if stream.isRecorded(tag) {
      return
    }
    stream.pointee.requestBytes &+= UInt64(event.frame_bytes)
    if event.has_block != 0 && !stream.pointee.hasHead {
      takeRequestHead(stream, from: pointer(to: \.requests.fields)!, context: context)
    }
    if event.type == UInt8(CH2_RST_STREAM) {
      if stream.end(H2Stream.requestEnded | H2Stream.responseEnded | H2Stream.reset, of: tag) {
        pointee.recordedByRequests &+= 1
        record(stream, id: id, now: now, context: context)
      }
    } else if event.end_stream != 0 && stream.end(H2Stream.requestEnded, of: tag) {
      pointee.recordedByRequests &+= 1
      record(stream, id: id, now: now, context: context)
    }
  }

  private func responseFrame(_ event: ch2_event, _ id: UInt32, now: UInt64, context: ExchangeContext) {
    let stream = streamSlot(id)
    let tag = self.tag(id)
    if stream.pointee.responseTag != tag {
      // A response begins with HEADERS; a RST_STREAM ends a stream the other side opened.
      let opens = event.type == UInt8(CH2_HEADERS) || stream.pointee.requestTag == tag
      guard opens, stream.claimResponseHalf(tag) else { return }
    } else if stream.isRecorded(tag) {
      return
    }
    stream.pointee.responseBytes &+= UInt64(event.frame_bytes)
    if event.type == UInt8(CH2_HEADERS) && stream.pointee.firstByte == 0 { stream.pointee.firstByte = now }
    if event.has_block != 0 {
      let fields = pointer(to: \.responses.fields)!
      if event.block_is_push != 0 {
        promised(event.promised_stream_id, request: fields, now: now, context: context)
      } else {
        takeResponseFields(stream, from: fields)
      }
    }
    if event.type == UInt8(CH2_RST_STREAM) {
      if stream.end(H2Stream.requestEnded | H2Stream.responseEnded | H2Stream.reset, of: tag) {
        pointee.recordedByResponses &+= 1
        record(stream, id: id, now: now, context: context)
      }
    } else if event.end_stream != 0 {
      stream.pointee.responseComplete = true
      if stream.end(H2Stream.responseEnded, of: tag) {
        pointee.recordedByResponses &+= 1
        record(stream, id: id, now: now, context: context)
      }
    }
  }

  /// A PUSH_PROMISE's header block: the request of the stream it promises, which the server opens.
  private func promised(
    _ id: UInt32, request: UnsafeMutablePointer<ch2_fields>, now: UInt64, context: ExchangeContext
  ) {
    let stream = streamSlot(id)
    let tag = self.tag(id)
    guard id != 0, stream.claimRequestHalf(tag) else { return }
    stream.pointee.start = now
    stream.pointee.ordinal = cnm_increment_u32(pointer(to: \.streamsOpened)!)
    takeRequestHead(stream, from: request, context: context)
    _ = stream.end(H2Stream.requestEnded, of: tag)  // its response is still to come
  }

  /// The request's method, path (as the target; :authority for CONNECT) and :authority (as the
  /// host), from its decoded header block; the connection's first request may name its server.
  private func takeRequestHead(
    _ stream: UnsafeMutablePointer<H2Stream>, from fields: UnsafeMutablePointer<ch2_fields>, context: ExchangeContext
  ) {
    let head = stream.pointer(to: \.head)!
    head.pointee.clearScalars()
    let raw = UnsafeRawPointer(fields)
    let method = UnsafeRawBufferPointer(
      start: raw + MemoryLayout<ch2_fields>.offset(of: \.method)!, count: Int(fields.pointee.method_length))
    let path = UnsafeRawBufferPointer(
      start: raw + MemoryLayout<ch2_fields>.offset(of: \.path)!, count: Int(fields.pointee.path_length))
    let authority = UnsafeRawBufferPointer(
      start: raw + MemoryLayout<ch2_fields>.offset(of: \.authority)!, count: Int(fields.pointee.authority_length))
    for byte in method.prefix(HTTPHead.methodCapacity) { head.pointee.appendMethodByte(byte) }
    head.pointee.appendTarget(path.isEmpty ? authority : path)
    if fields.pointee.path_truncated != 0 { head.pointee.targetTruncated = true }
    _ = head.pointee.appendHost(authority)
    if fields.pointee.authority_truncated != 0 { head.pointee.hostTruncated = true }
    head.pointee.minorVersion = 0
    stream.pointee.hasHead = true
    let core = context.core
    if stream.pointee.ordinal == 0, core.pointee.role == ConnectionCore.Role.client, core.pointee.host.isEmpty,
      let name = HostHeaderName.serverName(of: head, peerPort: core.pointee.peer.port, isTLS: context.isTLS)
    {
      core.pointee.host = FixedText(name)
    }
  }

  /// A response header block: the final status (a 1xx only until it comes), and a gRPC call's
  /// status and message (trailers, or the headers of a trailers-only response).
  private func takeResponseFields(_ stream: UnsafeMutablePointer<H2Stream>, from fields: UnsafeMutablePointer<ch2_fields>) {
    let status = fields.pointee.status
    if status != 0 && (stream.pointee.status == 0 || stream.pointee.status < 200) { stream.pointee.status = status }
    if fields.pointee.grpc_status >= 0 {
      stream.pointee.grpcStatus = fields.pointee.grpc_status
      let message = UnsafeRawBufferPointer(
        start: UnsafeRawPointer(fields) + MemoryLayout<ch2_fields>.offset(of: \.grpc_message)!,
        count: Int(fields.pointee.grpc_message_length))
      stream.pointee.grpcMessage = FixedText(message)
    }
  }

  /// Ends, as not complete, the streams past `last` that the client (or the server) opened: a
  /// GOAWAY's refusal, or every stream still open (`last` 0, both sides) at the close.
  private func endStreams(after last: UInt32, openedByClient: Bool?, now: UInt64, context: ExchangeContext) {
    let generation = UInt64(pointee.generation & 0x3FFF_FFFF)
    for index in 0..<H2Connection.streamCapacity {
      let stream = UnsafeMutableRawPointer(pointer(to: \.streams)!).assumingMemoryBound(to: H2Stream.self) + index
      // The stream the slot holds now, by whichever half is this connection's (the newer if both).
      let requestTag = stream.pointee.requestTag
      let responseTag = stream.pointee.responseTag
      var tag: UInt64 = requestTag >> 34 == generation ? requestTag : 0
      if responseTag >> 34 == generation && responseTag > tag { tag = responseTag }
      let id = UInt32(truncatingIfNeeded: tag >> 3) & 0x7FFF_FFFF
      guard tag != 0, id > last else { continue }
      if let openedByClient, (id & 1 == 1) != openedByClient { continue }
      if stream.end(H2Stream.requestEnded | H2Stream.responseEnded | H2Stream.reset, of: tag) {
        pointee.recordedAtFinish &+= 1
        record(stream, id: id, now: now, context: context)
      }
    }
  }

  /// The connection closed: the streams still open are recorded, as not complete.
  func finish(now: UInt64, context: ExchangeContext) {
    endStreams(after: 0, openedByClient: nil, now: now, context: context)
  }

  /// Stream `id`, both halves ended, becomes a record.
  func record(_ stream: UnsafeMutablePointer<H2Stream>, id: UInt32, now: UInt64, context: ExchangeContext) {
    let tag = self.tag(id)
    let hasRequest = stream.pointee.requestTag == tag
    let hasResponse = stream.pointee.responseTag == tag
    let firstByte = hasResponse ? stream.pointee.firstByte : 0
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
      if hasRequest && stream.pointee.hasHead {
        HTTPHead.copyReadableBytes(from: stream.pointer(to: \.head)!, to: record.pointer(to: \.httpRequest)!)
      } else {
        record.pointee.httpRequest.clearScalars()
      }
      record.pointee.httpStatus = status
      record.pointee.httpResponseCutShort = !(hasResponse && stream.pointee.responseComplete)
      record.pointee.httpFirstByteNanoseconds = firstByte == 0 ? 0 : firstByte &- start &+ 1
      record.pointee.httpRequestBytes = hasRequest ? stream.pointee.requestBytes : 0
      record.pointee.httpResponseBytes = hasResponse ? stream.pointee.responseBytes : 0
      record.pointee.httpReused = reused
      record.pointee.httpProtocol = RawRecord.HTTPVersion.h2
      record.pointee.streamID = id
      record.pointee.grpcStatus = hasResponse ? stream.pointee.grpcStatus : -1
      if hasResponse && stream.pointee.grpcStatus >= 0 { record.pointee.grpcMessage = stream.pointee.grpcMessage }
    }
  }
}

extension UnsafeMutablePointer where Pointee == HTTPExchanges {
  /// The connection switched to HTTP/2 after an HTTP/1.1 request asking for it (`Upgrade: h2c`),
  /// answered by 101: that request is stream 1's, whose response comes in HTTP/2 frames. (The
  /// 101 exchange itself is recorded as the HTTP/1.1 exchange it was.)
  func upgraded(to connection: UnsafeMutablePointer<H2Connection>, context: ExchangeContext) {
    guard pointee.requestsBegun > 0 else { return }
    let stream = connection.streamSlot(1)
    let tag = connection.tag(1)
    guard stream.claimRequestHalf(tag) else { return }
    stream.pointee.start = element(\.requestHalves, pointee.requestsBegun &- 1).pointee.start
    // Not the connection's first exchange: the 101 was (and carries the connection's setup).
    stream.pointee.ordinal = cnm_increment_u32(connection.pointer(to: \.streamsOpened)!) &+ 1
    HTTPHead.copyReadableBytes(from: pointer(to: \.requests.head)!, to: stream.pointer(to: \.head)!)
    stream.pointee.hasHead = true
    if stream.end(H2Stream.requestEnded, of: tag) {  // its response came first
      connection.pointee.recordedByRequests &+= 1
      connection.record(stream, id: 1, now: MonotonicClock.now(), context: context)
    }
  }
}
