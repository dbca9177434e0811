/// One request waiting for (or receiving) its response.
struct PendingExchange {
  /// Monotonic; the record's wall-clock start is derived from it (see `responseEvent`).
  var start: UInt64 = 0
  var firstResponseByte: UInt64 = 0
  var requestBytes: UInt64 = 0
  /// Bytes of informational (1xx) responses that came before the final one.
  var informationalBytes: UInt64 = 0
  /// The request parser's ``HTTPStreamParser/headSerial`` when its head was copied into
  /// ``request``: a request that repeats the last one (the same head, not parsed again) finds its
  /// copy made already, when it lands in the same slot (the only slot of a keep-alive connection
  /// with one request at a time). 0: no copy.
  var requestSerial: UInt32 = 0
  /// This exchange's request head is complete, and is ``request``.
  var hasRequest = false
  var request = HTTPHead()
}

/// The HTTP/1.x exchanges of one connection, read from its bytes: a parser per direction and the
/// requests not yet answered (pipelining). POD, lives in the connection table, updated on the
/// hooked thread without allocating.
struct HTTPExchanges {
  static let pendingCapacity = 8

  // Layout: the counters every exchange updates first, in the cache line where the request
  // parser's state begins; after the pending requests (~6.8 KB further) they were one more line
  // to fetch per exchange.
  var oldest = 0
  var count = 0
  /// Exchanges completed on this connection (the next one reuses the connection when > 0).
  var completed: UInt64 = 0
  var requests = HTTPStreamParser()
  var responses = HTTPStreamParser()
  var pending = InlineArray<8, PendingExchange>(repeating: PendingExchange())
}

/// What the exchange logic needs to turn a completed exchange into a record.
struct ExchangeContext {
  /// The connection's state as it is now (its id, role, peer and setup times): each http record
  /// carries a copy, so that it can be read without its connection record.
  let core: UnsafePointer<ConnectionCore>
  let isTLS: Bool
}

/// The exchange logic works in place, through a pointer into the connection table: the parsers and
/// pending requests are about 3 KB per connection, and copying a parser out and back around each
/// `feed` (what a `mutating` method whose closure also mutates `self` must do to satisfy exclusivity)
/// cost more than parsing a typical head. Accesses through the pointer touch disjoint fields: the
/// parser being fed, and the pending requests or the other direction's parser.
extension UnsafeMutablePointer where Pointee == HTTPExchanges {
  /// Bytes of the request direction (a client's writes, a server's reads).
  func requestBytes(_ bytes: UnsafeRawBufferPointer, now: UInt64) {
    guard !pointee.requests.hasGivenUp else { return }
    // The head the events come with is the parser's own: read in place, never copied whole.
    pointer(to: \.requests)!.pointee.feed(bytes, as: .requests) { event, head in
      requestEvent(event, head: head, now: now)
    }
  }

  /// Bytes of the response direction (a client's reads, a server's writes). Completed exchanges go
  /// to the recorder.
  func responseBytes(_ bytes: UnsafeRawBufferPointer, now: UInt64, context: ExchangeContext) {
    guard !pointee.responses.hasGivenUp else { return }
    pointer(to: \.responses)!.pointee.feed(bytes, as: .responses) { event, head in
      responseEvent(event, status: head.pointee.status, now: now, context: context)
    }
  }

  /// The connection closed: a close-delimited response ends here.
  func finish(now: UInt64, context: ExchangeContext) {
    pointer(to: \.responses)!.pointee.finish { event, head in
      responseEvent(event, status: head.pointee.status, now: now, context: context)
    }
  }

  private var newestIndex: Int? {
    pointee.count == 0 ? nil : (pointee.oldest + pointee.count - 1) % HTTPExchanges.pendingCapacity
  }

  private func pending(_ index: Int) -> UnsafeMutablePointer<PendingExchange> {
    UnsafeMutableRawPointer(pointer(to: \.pending)!).assumingMemoryBound(to: PendingExchange.self) + index
  }

  private func requestEvent(_ event: HTTPStreamEvent, head: UnsafePointer<HTTPHead>, now: UInt64) {
    switch event {
    case .messageStarted:
      if pointee.count == HTTPExchanges.pendingCapacity {  // more in flight than tracked: forget the oldest
        pointee.oldest = (pointee.oldest + 1) % HTTPExchanges.pendingCapacity
        pointee.count -= 1
      }
      // Field by field: assigning a fresh `PendingExchange()` would write all its ~850 bytes. The
      // request head it may hold from an earlier exchange is kept: it is this one's too when this
      // request repeats that one (`requestSerial`).
      let exchange = pending((pointee.oldest + pointee.count) % HTTPExchanges.pendingCapacity)
      exchange.pointee.start = now
      exchange.pointee.firstResponseByte = 0
      exchange.pointee.requestBytes = 0
      exchange.pointee.informationalBytes = 0
      exchange.pointee.hasRequest = false
      pointee.count += 1
    case .headComplete:
      if let index = newestIndex {
        let exchange = pending(index)
        let serial = pointee.requests.headSerial
        if exchange.pointee.requestSerial != serial {
          HTTPHead.copyReadableBytes(from: head, to: exchange.pointer(to: \.request)!)
          exchange.pointee.requestSerial = serial
        }
        exchange.pointee.hasRequest = true
        pointee.responses.expectResponse(to: head.pointee.requestKind)
      }
    case .messageComplete(let total), .messageIncomplete(let total):
      if let index = newestIndex { pending(index).pointee.requestBytes = total }
    case .switchedProtocols:
      pointee.responses.enterTunnel()
    case .gaveUp:
      break
    }
  }

  private func responseEvent(_ event: HTTPStreamEvent, status: UInt16, now: UInt64, context: ExchangeContext) {
    switch event {
    case .messageStarted:
      let oldest = pending(pointee.oldest)
      if pointee.count > 0, oldest.pointee.firstResponseByte == 0 { oldest.pointee.firstResponseByte = now }
    case .headComplete, .gaveUp:
      break
    case .switchedProtocols:
      pointee.requests.enterTunnel()
    case .messageComplete(let total), .messageIncomplete(let total):
      guard pointee.count > 0 else { return }
      let exchange = pending(pointee.oldest)
      if status >= 100 && status < 200 && status != 101 {
        exchange.pointee.informationalBytes &+= total
        return
      }
      pointee.oldest = (pointee.oldest + 1) % HTTPExchanges.pendingCapacity
      pointee.count -= 1
      // With nothing in flight, the next exchange starts in the first slot again: a keep-alive
      // connection keeps reusing one slot's memory (cached) instead of walking through all eight.
      // (`exchange` still points at this one's slot, read below.)
      if pointee.count == 0 { pointee.oldest = 0 }
      let reused = pointee.completed > 0
      pointee.completed &+= 1
      RawRecord.emit { record in  // every field an http record reads (see `RawRecord.emit`)
        record.pointee.kind = RawRecord.Kind.http
        // The wall clock at the connection's start plus the monotonic time since: one clock read
        // per exchange fewer (~20 ns of vDSO), and records of one connection never go back in time.
        record.pointee.startUnixNanoseconds =
          context.core.pointee.startUnixNanoseconds &+ (exchange.pointee.start &- context.core.pointee.startNanoseconds)
        record.pointee.durationNanoseconds = now &- exchange.pointee.start
        let copyStart = reused ? ConnectionCore.reusedCopyStart : ConnectionCore.httpCopyStart
        (UnsafeMutableRawPointer(record.pointer(to: \.core)!) + copyStart).copyMemory(
          from: UnsafeRawPointer(context.core) + copyStart, byteCount: MemoryLayout<ConnectionCore>.size &- copyStart)
        record.pointee.core.isTLS = context.isTLS ? 1 : 0
        if exchange.pointee.hasRequest {
          HTTPHead.copyReadableBytes(from: exchange.pointer(to: \.request)!, to: record.pointer(to: \.httpRequest)!)
        } else {
          record.pointee.httpRequest.clearScalars()  // the response came before the request's head ended
        }
        record.pointee.httpStatus = status
        record.pointee.httpFirstByteNanoseconds =
          exchange.pointee.firstResponseByte == 0 ? 0 : exchange.pointee.firstResponseByte &- exchange.pointee.start &+ 1
        record.pointee.httpRequestBytes = exchange.pointee.requestBytes
        record.pointee.httpResponseBytes = exchange.pointee.informationalBytes &+ total
        record.pointee.httpReused = reused
      }
    }
  }
}
