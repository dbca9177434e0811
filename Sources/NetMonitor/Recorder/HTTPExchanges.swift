import CNetMonitor

/// One exchange of a connection, in the slot of its sequence number: the request half is written by
/// the thread that moves the requests, the response half by the thread that moves the responses
/// (one thread, or two: a client may send on one and read on another, as Java's HttpClient does).
/// Whichever half ends second records the exchange (``halves``).
struct PendingExchange {
  /// Which exchange the slot holds and which of its halves ended: `sequence << 2`, then
  /// ``requestEnded`` and ``responseEnded``. Changed only with an atomic compare-and-swap.
  var halves: UInt32 = 0
  static let requestEnded: UInt32 = 1
  static let responseEnded: UInt32 = 2

  // The request half.
  /// Monotonic; the record's wall-clock start is derived from it (see `record`).
  var start: UInt64 = 0
  var requestBytes: UInt64 = 0
  /// The request parser's ``HTTPStreamParser/headSerial`` when its head was copied into
  /// ``request``: a request that repeats the last one (the same head, not parsed again) finds its
  /// copy made already when it lands in a slot that holds it. 0: no copy.
  var requestSerial: UInt32 = 0
  /// This exchange's request head is complete, and is ``request``.
  var hasRequest = false
  /// What the response parser must know of the request (HEAD, CONNECT): see
  /// ``HTTPExchanges/requestKindsKnown``.
  var requestKind = HTTPRequestKind.ordinary

  // The response half.
  var status: UInt16 = 0
  var firstResponseByte: UInt64 = 0
  var end: UInt64 = 0
  /// Bytes of informational (1xx) responses that came before the final one.
  var informationalBytes: UInt64 = 0
  /// The final response's bytes, with the informational ones before it.
  var responseBytes: UInt64 = 0

  var request = HTTPHead()
}

/// The HTTP/1.x exchanges of one connection, read from its bytes: a parser per direction and the
/// exchanges under way (pipelining). POD, lives in the connection table, updated on the hooked
/// threads without allocating or locking.
///
/// HTTP/1.x answers requests in order, so the n-th final response answers the n-th request: each
/// direction counts its own messages, and exchange n lives in slot `n % pendingCapacity`. The two
/// directions share nothing else but the request kinds and the slots' ``PendingExchange/halves``,
/// so that a response read on one thread before the thread that sent its request has even parsed
/// it (that thread is preempted between the system call and its hook, while the server answers)
/// still meets its own request, not the next one.
struct HTTPExchanges {
  static let pendingCapacity = 8

  // Layout: the counters every exchange updates first, in the cache line where the request
  // parser's state begins; after the pending requests (~6.8 KB further) they were one more line
  // to fetch per exchange.
  /// Requests begun (the request direction's alone).
  var requestsBegun: UInt32 = 0
  /// Requests whose kind is in their slot (``PendingExchange/requestKind``): written by the
  /// request direction, read by the response direction, both atomically.
  var requestKindsKnown: UInt32 = 0
  /// Final responses ended (the response direction's alone), and how many of the request kinds
  /// it has taken into its parser's expectations.
  var responsesEnded: UInt32 = 0
  var requestKindsTaken: UInt32 = 0
  /// The response under way (number ``responsesEnded``) has begun, and its final head is read.
  var responseBegun = false
  var finalHeadRead = false
  /// Exchanges recorded on this connection (atomic: either direction may record one).
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
/// parser being fed, and its direction's counters and half of the pending exchanges.
extension UnsafeMutablePointer where Pointee == HTTPExchanges {
  /// Bytes of the request direction (a client's writes, a server's reads).
  func requestBytes(_ bytes: UnsafeRawBufferPointer, now: UInt64, context: ExchangeContext) {
    guard !pointee.requests.hasGivenUp else { return }
    // The head the events come with is the parser's own: read in place, never copied whole.
    pointer(to: \.requests)!.pointee.feed(bytes, as: .requests) { event, head in
      requestEvent(event, head: head, now: now, context: context)
    }
  }

  /// Bytes of the response direction (a client's reads, a server's writes).
  func responseBytes(_ bytes: UnsafeRawBufferPointer, now: UInt64, context: ExchangeContext) {
    guard !pointee.responses.hasGivenUp else { return }
    takeRequestKinds()
    pointer(to: \.responses)!.pointee.feed(bytes, as: .responses) { event, head in
      responseEvent(event, status: head.pointee.status, now: now, context: context)
    }
  }

  /// The connection closed: a close-delimited response ends here, and so do exchanges whose
  /// response ended but whose request never did (a body cut short, a request the parser gave up on).
  func finish(now: UInt64, context: ExchangeContext) {
    if !pointee.responses.hasGivenUp {
      takeRequestKinds()
      pointer(to: \.responses)!.pointee.finish { event, head in
        responseEvent(event, status: head.pointee.status, now: now, context: context)
      }
    }
    // Every response ended was recorded (the usual case), or some wait for their requests.
    guard UInt32(truncatingIfNeeded: cnm_load_u64(pointer(to: \.completed)!)) != pointee.responsesEnded else { return }
    for index in 0..<HTTPExchanges.pendingCapacity {
      let halves = pending(index).pointer(to: \.halves)!
      var state = cnm_load_u32(halves)
      while state & 3 == PendingExchange.responseEnded {
        if cnm_exchange_u32(halves, &state, state | PendingExchange.requestEnded) {
          record(sequence: state >> 2, context: context)
          break
        }
      }
    }
  }

  /// The slot of exchange `sequence`.
  private func pending(_ sequence: UInt32) -> UnsafeMutablePointer<PendingExchange> {
    pending(Int(sequence) & (HTTPExchanges.pendingCapacity - 1))
  }

  private func pending(_ index: Int) -> UnsafeMutablePointer<PendingExchange> {
    UnsafeMutableRawPointer(pointer(to: \.pending)!).assumingMemoryBound(to: PendingExchange.self) + index
  }

  /// Ends one half (`half`) of exchange `sequence`; true when the other half had ended: the
  /// caller records the exchange. A slot still tagged with an older exchange (one that never
  /// ended: more than ``HTTPExchanges/pendingCapacity`` in flight) is taken over.
  private func end(_ half: UInt32, of sequence: UInt32) -> Bool {
    let halves = pending(sequence).pointer(to: \.halves)!
    let tag = sequence << 2
    var state = cnm_load_u32(halves)
    while true {
      let current = state & ~3 == tag ? state : tag
      if current & half != 0 { return false }  // ended already (by `finish`)
      if cnm_exchange_u32(halves, &state, current | half) { return current != tag }
    }
  }

  /// Hands the response parser the kinds (HEAD, CONNECT…) of the requests sent since the last
  /// call, except those whose response head it has read already (without it: the request's
  /// thread had not parsed it yet).
  @inline(__always)
  private func takeRequestKinds() {
    let known = cnm_load_u32(pointer(to: \.requestKindsKnown)!)
    guard known != pointee.requestKindsTaken else { return }
    let answered = pointee.responsesEnded &+ (pointee.finalHeadRead ? 1 : 0)
    while pointee.requestKindsTaken != known {
      let sequence = pointee.requestKindsTaken
      if Int32(bitPattern: sequence &- answered) >= 0 {
        pointee.responses.expectResponse(to: pending(sequence).pointee.requestKind)
      }
      pointee.requestKindsTaken = sequence &+ 1
    }
  }

  private func requestEvent(
    _ event: HTTPStreamEvent, head: UnsafePointer<HTTPHead>, now: UInt64, context: ExchangeContext
  ) {
    let sequence = pointee.requestsBegun &- 1  // the request under way
    switch event {
    case .messageStarted:
      // Field by field: assigning a fresh `PendingExchange()` would write all its ~850 bytes. The
      // request head it may hold from an earlier exchange is kept: it is this one's too when this
      // request repeats that one (`requestSerial`).
      let exchange = pending(pointee.requestsBegun)
      exchange.pointee.start = now
      exchange.pointee.requestBytes = 0
      exchange.pointee.hasRequest = false
      pointee.requestsBegun &+= 1
    case .headComplete:
      let exchange = pending(sequence)
      let serial = pointee.requests.headSerial
      if exchange.pointee.requestSerial != serial {
        HTTPHead.copyReadableBytes(from: head, to: exchange.pointer(to: \.request)!)
        exchange.pointee.requestSerial = serial
      }
      exchange.pointee.hasRequest = true
      exchange.pointee.requestKind = head.pointee.requestKind
      cnm_store_u32(pointer(to: \.requestKindsKnown)!, pointee.requestsBegun)
    case .messageComplete(let total), .messageIncomplete(let total):
      pending(sequence).pointee.requestBytes = total
      if end(PendingExchange.requestEnded, of: sequence) { record(sequence: sequence, context: context) }
    case .switchedProtocols:
      pointee.responses.enterTunnel()
    case .gaveUp:
      break
    }
  }

  private func responseEvent(_ event: HTTPStreamEvent, status: UInt16, now: UInt64, context: ExchangeContext) {
    let sequence = pointee.responsesEnded  // the response under way
    switch event {
    case .messageStarted:
      if !pointee.responseBegun {  // a final response, or the first of the informational ones before it
        pointee.responseBegun = true
        pending(sequence).pointee.firstResponseByte = now
        pending(sequence).pointee.informationalBytes = 0
      }
    case .headComplete:
      if status >= 200 || status == 101 { pointee.finalHeadRead = true }
    case .gaveUp:
      break
    case .switchedProtocols:
      pointee.requests.enterTunnel()
    case .messageComplete(let total), .messageIncomplete(let total):
      let exchange = pending(sequence)
      if status >= 100 && status < 200 && status != 101 {
        exchange.pointee.informationalBytes &+= total
        return
      }
      exchange.pointee.status = status
      exchange.pointee.end = now
      exchange.pointee.responseBytes = exchange.pointee.informationalBytes &+ total
      pointee.responsesEnded = sequence &+ 1
      pointee.responseBegun = false
      pointee.finalHeadRead = false
      // A request parser that gave up ends no more requests: the response is recorded alone.
      if end(PendingExchange.responseEnded, of: sequence)
        || (pointee.requests.hasGivenUp && end(PendingExchange.requestEnded, of: sequence))
      {
        record(sequence: sequence, context: context)
      }
    }
  }

  /// Exchange `sequence`, both halves ended, becomes a record.
  private func record(sequence: UInt32, context: ExchangeContext) {
    let exchange = pending(sequence)
    // A request this direction has not even begun (a response recorded by `finish`) has no start
    // or head here. One whose hook ran after its response was read (its thread was preempted)
    // starts no later than the response's first byte.
    let requestBegun = Int32(bitPattern: pointee.requestsBegun &- sequence) > 0
    let firstByte = exchange.pointee.firstResponseByte
    let end = exchange.pointee.end
    let responseStart = firstByte == 0 ? end : firstByte
    let start = requestBegun ? Swift.min(exchange.pointee.start, responseStart) : responseStart
    let reused = sequence > 0
    cnm_add_u64(pointer(to: \.completed)!, 1)
    RawRecord.emit { record in  // every field an http record reads (see `RawRecord.emit`)
      record.pointee.kind = RawRecord.Kind.http
      // The wall clock at the connection's start plus the monotonic time since: one clock read
      // per exchange fewer (~20 ns of vDSO), and records of one connection never go back in time.
      record.pointee.startUnixNanoseconds =
        context.core.pointee.startUnixNanoseconds &+ (start &- context.core.pointee.startNanoseconds)
      record.pointee.durationNanoseconds = end &- start
      let copyStart = reused ? ConnectionCore.reusedCopyStart : ConnectionCore.httpCopyStart
      (UnsafeMutableRawPointer(record.pointer(to: \.core)!) + copyStart).copyMemory(
        from: UnsafeRawPointer(context.core) + copyStart, byteCount: MemoryLayout<ConnectionCore>.size &- copyStart)
      record.pointee.core.isTLS = context.isTLS ? 1 : 0
      if requestBegun && exchange.pointee.hasRequest {
        HTTPHead.copyReadableBytes(from: exchange.pointer(to: \.request)!, to: record.pointer(to: \.httpRequest)!)
      } else {
        record.pointee.httpRequest.clearScalars()  // the response came before the request's head ended
      }
      record.pointee.httpStatus = exchange.pointee.status
      record.pointee.httpFirstByteNanoseconds = firstByte == 0 ? 0 : firstByte &- start &+ 1
      record.pointee.httpRequestBytes = requestBegun ? exchange.pointee.requestBytes : 0
      record.pointee.httpResponseBytes = exchange.pointee.responseBytes
      record.pointee.httpReused = reused
    }
  }
}
