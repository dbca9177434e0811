/// One request waiting for (or receiving) its response.
struct PendingExchange {
  var startUnixNanoseconds: UInt64 = 0
  var start: UInt64 = 0
  var firstResponseByte: UInt64 = 0
  var request = HTTPHead()
  var requestBytes: UInt64 = 0
  /// Bytes of informational (1xx) responses that came before the final one.
  var informationalBytes: UInt64 = 0
}

/// The HTTP/1.x exchanges of one connection, read from its bytes: a parser per direction and the
/// requests not yet answered (pipelining). POD, lives in the connection table, updated on the
/// hooked thread without allocating.
struct HTTPExchanges {
  static let pendingCapacity = 8

  var requests = HTTPStreamParser()
  var responses = HTTPStreamParser()
  var pending = InlineArray<8, PendingExchange>(repeating: PendingExchange())
  var oldest = 0
  var count = 0
  /// Exchanges completed on this connection (the next one reuses the connection when > 0).
  var completed: UInt64 = 0


}

/// What the exchange logic needs to turn a completed exchange into a record.
struct ExchangeContext {
  let connectionID: UInt64
  let isTLS: Bool
}

extension HTTPExchanges {
  /// Bytes of the request direction (a client's writes, a server's reads).
  mutating func requestBytes(_ bytes: UnsafeRawBufferPointer, now: UInt64) {
    guard !requests.hasGivenUp else { return }
    var parser = requests
    parser.feed(bytes, as: .requests) { event, head in
      switch event {
      case .messageStarted:
        if count == Self.pendingCapacity {  // more in flight than tracked: forget the oldest
          oldest = (oldest + 1) % Self.pendingCapacity
          count -= 1
        }
        let index = (oldest + count) % Self.pendingCapacity
        pending[index] = PendingExchange()
        pending[index].start = now
        pending[index].startUnixNanoseconds = MonotonicClock.unixNow()
        count += 1
      case .headComplete:
        if let index = newestIndex {
          pending[index].request = copy head
          responses.expectResponse(to: head.requestKind)
        }
      case .messageComplete(let total), .messageIncomplete(let total):
        if let index = newestIndex { pending[index].requestBytes = total }
      case .switchedProtocols:
        responses.enterTunnel()
      case .gaveUp:
        break
      }
    }
    requests = parser
  }

  private var newestIndex: Int? { count == 0 ? nil : (oldest + count - 1) % Self.pendingCapacity }

  /// Bytes of the response direction (a client's reads, a server's writes). Completed exchanges go
  /// to the recorder.
  mutating func responseBytes(_ bytes: UnsafeRawBufferPointer, now: UInt64, context: ExchangeContext) {
    guard !responses.hasGivenUp else { return }
    var parser = responses
    parser.feed(bytes, as: .responses) { event, head in
      responseEvent(event, status: head.status, now: now, context: context)
    }
    responses = parser
  }

  /// The connection closed: a close-delimited response ends here.
  mutating func finish(now: UInt64, context: ExchangeContext) {
    var parser = responses
    parser.finish { event, head in responseEvent(event, status: head.status, now: now, context: context) }
    responses = parser
  }

  private mutating func responseEvent(_ event: HTTPStreamEvent, status: UInt16, now: UInt64, context: ExchangeContext) {
    switch event {
    case .messageStarted:
      if count > 0, pending[oldest].firstResponseByte == 0 { pending[oldest].firstResponseByte = now }
    case .headComplete, .gaveUp:
      break
    case .switchedProtocols:
      requests.enterTunnel()
    case .messageComplete(let total), .messageIncomplete(let total):
      guard count > 0 else { return }
      if status >= 100 && status < 200 && status != 101 {
        pending[oldest].informationalBytes &+= total
        return
      }
      let exchange = pending[oldest]
      oldest = (oldest + 1) % Self.pendingCapacity
      count -= 1
      let reused = completed > 0
      completed &+= 1
      RawRecord.emit { record in
        record.kind = RawRecord.Kind.http
        record.startUnixNanoseconds = exchange.startUnixNanoseconds
        record.durationNanoseconds = now &- exchange.start
        record.core.id = context.connectionID
        record.core.isTLS = context.isTLS ? 1 : 0
        record.httpRequest = exchange.request
        record.httpStatus = status
        record.httpFirstByteNanoseconds = exchange.firstResponseByte == 0 ? 0 : exchange.firstResponseByte &- exchange.start &+ 1
        record.httpRequestBytes = exchange.requestBytes
        record.httpResponseBytes = exchange.informationalBytes &+ total
        record.httpReused = reused
      }
    }
  }
}
