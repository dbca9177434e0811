import CNetMonitor

/// The request half of an exchange, in the slot of its sequence number (32 bytes: two to a cache
/// line), written by the thread that moves the requests. ``halves`` is the one word both halves
/// write: whichever ends second records the exchange.
struct RequestHalf {
  /// Which exchange the slot holds and which of its halves ended: `sequence << 2`, then
  /// ``requestEnded`` and ``responseEnded``. Changed only atomically.
  var halves: UInt32 = 0
  static let requestEnded: UInt32 = 1
  static let responseEnded: UInt32 = 2

  /// The request parser's ``HTTPStreamParser/headSerial`` for this request's head: its copy is
  /// ``HTTPExchanges/heads`` at `headSerial % 8`, while that copy's serial matches.
  var headSerial: UInt32 = 0
  /// This exchange's request head is complete, and copied.
  var hasRequest = false
  /// What the response parser must know of the request (HEAD, CONNECT): see
  /// ``HTTPExchanges/requestKindsKnown``.
  var requestKind = HTTPRequestKind.ordinary
  /// Monotonic; the record's wall-clock start is derived from it (see `record`).
  var start: UInt64 = 0
  var requestBytes: UInt64 = 0
}

/// A response that ended before its request did, parked in the slot of its sequence number for
/// the request's side to record (the usual order needs no copy: see `responseEvent`).
struct ResponseHalf {
  var status: UInt16 = 0
  var firstByte: UInt64 = 0
  var end: UInt64 = 0
  /// The final response's bytes, with the informational (1xx) ones before it.
  var bytes: UInt64 = 0
  /// The connection closed before the response's end (its Content-Length, or chunked end).
  var cutShort = false
}

/// A copy of a request head, kept by its parser serial: a request that repeats the last one (the
/// same head, not parsed again) has its copy made already, so a keep-alive connection repeating
/// one request copies it once and reads it from the same lines at every record.
struct HeadCopy {
  var serial: UInt32 = 0
  var head = HTTPHead()
}

/// The HTTP/1.x exchanges of one connection, read from its bytes: a parser per direction and the
/// exchanges under way (pipelining). POD, lives in the connection table, updated on the hooked
/// threads without allocating or locking.
///
/// HTTP/1.x answers requests in order, so the n-th final response answers the n-th request: each
/// direction counts its own messages, and exchange n has the slot `n % pendingCapacity`. The two
/// directions share only the request kinds and the slots' ``RequestHalf/halves``, so that a
/// response read on one thread before the thread that sent its request has even parsed it (that
/// thread is preempted between the system call and its hook, while the server answers; Java's
/// HttpClient sends and reads on two threads) still meets its own request, not the next one.
struct HTTPExchanges {
  /// The size of the arrays below: slot `n % 8` (`element`).
  static let pendingCapacity = 8

  // Layout: the counters every exchange updates first, in the cache line where the request
  // parser's state begins.
  /// Requests begun (the request direction's alone).
  var requestsBegun: UInt32 = 0
  /// Requests whose kind is in their slot (``RequestHalf/requestKind``), published when a request
  /// is not ordinary (HEAD, CONNECT), for all the requests before it too: written by the request
  /// direction, read by the response direction, both atomically. A response with no kind taken
  /// answers an ordinary request, so GET-only traffic publishes nothing.
  var requestKindsKnown: UInt32 = 0
  /// Final responses ended (the response direction's alone), and how many of the request kinds
  /// it has taken into its parser's expectations.
  var responsesEnded: UInt32 = 0
  var requestKindsTaken: UInt32 = 0
  /// The response under way (number ``responsesEnded``): its first byte (0: not begun), and the
  /// informational responses' bytes before it.
  var responseFirstByte: UInt64 = 0
  var informationalBytes: UInt64 = 0
  /// Exchanges recorded, counted by who recorded them (no counter has two writers): the response
  /// direction; the request direction (responses parked before their requests); `finish`.
  var recordedByResponses: UInt32 = 0
  var recordedByRequests: UInt32 = 0
  var recordedAtFinish: UInt32 = 0
  /// Responses parked for their requests (the response direction's).
  var responsesParked: UInt32 = 0
  /// 0, or how many requests come before the connection switches protocols: a 101 (or a
  /// CONNECT's 2xx) answered the last of them. Published by the response direction; the request
  /// direction enters the tunnel itself, once it has read that request, which may be after the
  /// answer (see `responseEvent`).
  var requestsBeforeTunnel: UInt32 = 0
  /// Exchanges the hooks record themselves while they repeat (``ExchangeReplay``): read and
  /// written at every call Swift sees, so with the counters, in the lines the hooks prefetch.
  var replay = ExchangeReplay()
  var requests = HTTPStreamParser()
  var responses = HTTPStreamParser()
  var requestHalves = InlineArray<8, RequestHalf>(repeating: RequestHalf())
  var responseHalves = InlineArray<8, ResponseHalf>(repeating: ResponseHalf())
  var heads = InlineArray<8, HeadCopy>(repeating: HeadCopy())

  /// The exchanges recorded on this connection (the hooks' replays once Swift took over).
  var recorded: UInt64 {
    UInt64(recordedByResponses &+ recordedByRequests &+ recordedAtFinish &+ replay.responsesTaken)
  }
}

/// What the exchange logic needs to turn a completed exchange into a record.
struct ExchangeContext {
  /// The connection's state as it is now (its id, role, peer and setup times): each http record
  /// carries a copy, so that it can be read without its connection record. The first request's
  /// head may name it (``HostHeaderName``).
  let core: UnsafeMutablePointer<ConnectionCore>
  let isTLS: Bool
  /// The hooks' part of the connection's entry: its replay (``ExchangeReplay``).
  let head: UnsafeMutablePointer<cnm_connection_head>
}

/// The exchange logic works in place, through a pointer into the connection table: the parsers and
/// pending requests are about 8 KB per connection, and copying a parser out and back around each
/// `feed` (what a `mutating` method whose closure also mutates `self` must do to satisfy exclusivity)
/// cost more than parsing a typical head. Accesses through the pointer touch disjoint fields: the
/// parser being fed, and its direction's counters and halves.
extension UnsafeMutablePointer where Pointee == HTTPExchanges {
  /// Bytes of the request direction (a client's writes, a server's reads).
  func requestBytes(_ bytes: UnsafeRawBufferPointer, now: UInt64, context: ExchangeContext) {
    guard !pointee.requests.hasGivenUp else { return }
    if enterAnsweredTunnel(at: 0) { return }
    // The head the events come with is the parser's own: read in place, never copied whole.
    pointer(to: \.requests)!.pointee.feed(bytes, as: .requests) { event, head in
      requestEvent(event, head: head, now: now, context: context)
    }
    // Its answer was read first: these bytes ended the request, and the tunnel begins after them.
    // (A client sends nothing after a request for an upgrade until it is answered.)
    _ = enterAnsweredTunnel(at: bytes.count)
  }

  /// Switches the request direction to the tunnel a 101 (or a CONNECT's 2xx) opened once it has
  /// read the request that answer ends (``HTTPExchanges/requestsBeforeTunnel``), the tunnel
  /// beginning at byte `start` of the bytes fed last; true when it did.
  private func enterAnsweredTunnel(at start: Int) -> Bool {
    let before = cnm_load_u32(pointer(to: \.requestsBeforeTunnel)!)
    guard before != 0, pointee.requestsBegun >= before, pointee.requests.isBetweenMessages else { return false }
    pointee.requests.enterTunnel(at: start)
    return true
  }

  /// Bytes of the response direction (a client's reads, a server's writes).
  func responseBytes(_ bytes: UnsafeRawBufferPointer, now: UInt64, context: ExchangeContext) {
    guard !pointee.responses.hasGivenUp else { return }
    takeRequestKinds(now: now, context: context)
    pointer(to: \.responses)!.pointee.feed(bytes, as: .responses) { event, head in
      responseEvent(event, status: head.pointee.status, now: now, context: context)
    }
  }

  /// The connection closed: a close-delimited response ends here, and so do exchanges whose
  /// response ended but whose request never did (a body cut short: its bytes so far), and requests
  /// no response answered (``recordUnanswered(now:context:)``).
  func finish(now: UInt64, context: ExchangeContext) {
    takeOverFromReplay(requests: true, responses: true, context: context)
    let responsesReadable = !pointee.responses.hasGivenUp
    if responsesReadable {
      takeRequestKinds(now: now, context: context)
      pointer(to: \.responses)!.pointee.finish { event, head in
        responseEvent(event, status: head.pointee.status, now: now, context: context)
      }
    }
    if !pointee.requests.hasGivenUp {
      pointer(to: \.requests)!.pointee.finish { event, head in
        requestEvent(event, head: head, now: now, context: context)
      }
    }
    defer { if responsesReadable { recordUnanswered(now: now, context: context) } }
    // Usually every parked response was recorded by its request's side.
    guard pointee.responsesParked != pointee.recordedByRequests &+ pointee.recordedAtFinish else { return }
    for index in 0..<UInt32(HTTPExchanges.pendingCapacity) {
      let halves = requestHalf(index).pointer(to: \.halves)!
      var state = cnm_load_u32(halves)
      while state & 3 == RequestHalf.responseEnded {
        if cnm_exchange_u32(halves, &state, state | RequestHalf.requestEnded) {
          pointee.recordedAtFinish &+= 1
          record(sequence: state >> 2, response: responseHalf(index).pointee, context: context)
          break
        }
      }
    }
  }

  /// Requests that no response answered before the close (the server closed without one, the
  /// client gave up waiting): recorded with no status (`no_response`), ending at the close, with
  /// the informational responses' bytes for the first. Only the last ``HTTPExchanges/pendingCapacity``
  /// requests are still in their slots, and only those whose head was read say what they were.
  private func recordUnanswered(now: UInt64, context: ExchangeContext) {
    let unanswered = pointee.requestsBegun &- pointee.responsesEnded
    guard Int32(bitPattern: unanswered) > 0 else { return }
    var sequence = pointee.requestsBegun &- Swift.min(unanswered, UInt32(HTTPExchanges.pendingCapacity))
    while sequence != pointee.requestsBegun {
      defer { sequence &+= 1 }
      let half = requestHalf(sequence)
      guard half.pointee.hasRequest,
        cnm_load_u32(half.pointer(to: \.halves)!) == sequence << 2 | RequestHalf.requestEnded
      else { continue }
      cnm_store_u32(half.pointer(to: \.halves)!, sequence << 2 | 3)
      pointee.recordedAtFinish &+= 1
      let informational = sequence == pointee.responsesEnded ? pointee.informationalBytes : 0
      record(sequence: sequence, response: ResponseHalf(status: 0, firstByte: 0, end: now, bytes: informational),
             context: context)
    }
  }

  /// Element `number % 8` of one of the exchanges' arrays, in place.
  func element<Element>(
    _ array: WritableKeyPath<HTTPExchanges, InlineArray<8, Element>>, _ number: UInt32
  ) -> UnsafeMutablePointer<Element> {
    UnsafeMutableRawPointer(pointer(to: array)!).assumingMemoryBound(to: Element.self) + (Int(number) & 7)
  }

  private func requestHalf(_ sequence: UInt32) -> UnsafeMutablePointer<RequestHalf> {
    element(\.requestHalves, sequence)
  }

  private func responseHalf(_ sequence: UInt32) -> UnsafeMutablePointer<ResponseHalf> {
    element(\.responseHalves, sequence)
  }

  private func head(serial: UInt32) -> UnsafeMutablePointer<HeadCopy> { element(\.heads, serial) }

  /// Ends one half (`half`) of exchange `sequence`; true when the other half had ended: the
  /// caller records the exchange. The second half to end sees the first in its load and needs no
  /// atomic write; the first publishes itself with a compare-and-swap, which a second half ending
  /// at the same instant makes fail (that one then sees it). A slot still tagged with an older
  /// exchange (one that never ended: more than ``HTTPExchanges/pendingCapacity`` in flight) is
  /// taken over.
  @inline(__always)
  private func end(_ half: UInt32, of sequence: UInt32) -> Bool {
    let halves = requestHalf(sequence).pointer(to: \.halves)!
    let tag = sequence << 2
    var state = cnm_load_u32(halves)
    while true {
      let current = state & ~3 == tag ? state : tag
      if current != tag { return current & half == 0 }  // the other half ended (or this one, by `finish`)
      if cnm_exchange_u32(halves, &state, tag | half) { return false }
    }
  }

  /// Hands the response parser the kinds (HEAD, CONNECT…) of the requests published since the
  /// last call, except those whose response head it has read already (without it: the request's
  /// thread had not parsed it yet). The slots of the others are intact: they are unanswered, so
  /// fewer than ``HTTPExchanges/pendingCapacity`` requests old.
  @inline(__always)
  private func takeRequestKinds(now: UInt64, context: ExchangeContext) {
    let known = cnm_load_u32(pointer(to: \.requestKindsKnown)!)
    if known != pointee.requestKindsTaken { takeRequestKinds(upTo: known, now: now, context: context) }
  }

  private func takeRequestKinds(upTo known: UInt32, now: UInt64, context: ExchangeContext) {
    let answered = pointee.responses.finalHeads
    while pointee.requestKindsTaken != known {
      let sequence = pointee.requestKindsTaken
      let kind = requestHalf(sequence).pointee.requestKind
      if Int32(bitPattern: sequence &- answered) >= 0 {
        pointee.responses.expectResponse(to: kind)
      } else if kind == .head && sequence == pointee.responsesEnded {
        // The response being read answers this HEAD, and was framed by its Content-Length: it
        // has no body, so it ends here (before the next response's bytes are taken for one), as
        // of its first byte (its head came in one piece, or nearly).
        let end = pointee.responseFirstByte == 0 ? now : pointee.responseFirstByte
        _ = pointer(to: \.responses)!.pointee.endAsAnswerToHEAD { event, head in
          responseEvent(event, status: head.pointee.status, now: end, context: context)
        }
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
      let half = requestHalf(pointee.requestsBegun)
      half.pointee.start = now
      half.pointee.requestBytes = 0
      half.pointee.hasRequest = false
      pointee.requestsBegun &+= 1
    case .headComplete:
      let half = requestHalf(sequence)
      let serial = pointee.requests.headSerial
      let copy = self.head(serial: serial)
      if copy.pointee.serial != serial {
        HTTPHead.copyReadableBytes(from: head, to: copy.pointer(to: \.head)!)
        copy.pointee.serial = serial
      }
      half.pointee.headSerial = serial
      half.pointee.hasRequest = true
      if sequence == 0 { nameConnection(after: head, context: context) }
      let kind = head.pointee.requestKind
      half.pointee.requestKind = kind
      if kind != .ordinary { cnm_store_u32(pointer(to: \.requestKindsKnown)!, pointee.requestsBegun) }
    case .messageComplete(let total), .messageIncomplete(let total):
      requestHalf(sequence).pointee.requestBytes = total
      if end(RequestHalf.requestEnded, of: sequence) {  // its response came first, and is parked
        // Both ended, so that `finish` does not record it again (no one else writes the slot now).
        cnm_store_u32(requestHalf(sequence).pointer(to: \.halves)!, sequence << 2 | 3)
        pointee.recordedByRequests &+= 1
        record(sequence: sequence, response: responseHalf(sequence).pointee, context: context)
      }
    case .switchedProtocols:
      pointee.responses.enterTunnel()
    case .gaveUp:
      break
    }
  }

  /// A client connection that nothing named yet takes the name its first request's Host header
  /// gives its server (``HostHeaderName``).
  private func nameConnection(after head: UnsafePointer<HTTPHead>, context: ExchangeContext) {
    let core = context.core
    guard core.pointee.role == ConnectionCore.Role.client, core.pointee.host.isEmpty,
      let name = HostHeaderName.serverName(of: head, peerPort: core.pointee.peer.port, isTLS: context.isTLS)
    else { return }
    core.pointee.host = FixedText(name)
  }

  private func responseEvent(_ event: HTTPStreamEvent, status: UInt16, now: UInt64, context: ExchangeContext) {
    switch event {
    case .messageStarted:
      // A final response, or the first of the informational ones before it.
      if pointee.responseFirstByte == 0 { pointee.responseFirstByte = now }
    case .headComplete, .gaveUp:
      break
    case .switchedProtocols:
      // The request direction switches on its own thread once it has read the request this
      // answered, which a client that reads on another thread (Java's HttpClient) may not have
      // yet: switching it here would take that request's bytes for the tunnel's.
      cnm_store_u32(pointer(to: \.requestsBeforeTunnel)!, pointee.responsesEnded)
    case .messageComplete(let total), .messageIncomplete(let total):
      if status >= 100 && status < 200 && status != 101 {
        pointee.informationalBytes &+= total
        return
      }
      let sequence = pointee.responsesEnded
      var cutShort = false
      if case .messageIncomplete = event { cutShort = true }
      let response = ResponseHalf(
        status: status, firstByte: pointee.responseFirstByte, end: now, bytes: pointee.informationalBytes &+ total,
        cutShort: cutShort)
      pointee.responsesEnded = sequence &+ 1
      pointee.responseFirstByte = 0
      pointee.informationalBytes = 0
      // A request parser that gave up ends no more requests: the response is recorded alone.
      if pointee.requests.hasGivenUp && requestHalf(sequence).pointee.halves & ~3 != sequence << 2 {
        pointee.recordedByResponses &+= 1
        record(sequence: sequence, response: response, context: context)
        return
      }
      if cnm_load_u32(requestHalf(sequence).pointer(to: \.halves)!) != sequence << 2 | RequestHalf.requestEnded {
        responseHalf(sequence).pointee = response  // perhaps the first half to end: the request's side may need it
      }
      if end(RequestHalf.responseEnded, of: sequence) {
        pointee.recordedByResponses &+= 1
        record(sequence: sequence, response: response, context: context)
      } else {
        pointee.responsesParked &+= 1
      }
    }
  }

  /// Exchange `sequence`, both halves ended, becomes a record.
  private func record(sequence: UInt32, response: ResponseHalf, context: ExchangeContext) {
    let half = requestHalf(sequence)
    // A request this direction has not even begun (a response recorded by `finish`, or alone) has
    // no start or head here. One whose hook ran after its response was read (its thread was
    // preempted) starts no later than the response's first byte.
    let requestBegun = Int32(bitPattern: pointee.requestsBegun &- sequence) > 0
    let responseStart = response.firstByte == 0 ? response.end : response.firstByte
    let start = requestBegun ? Swift.min(half.pointee.start, responseStart) : responseStart
    let copy = head(serial: half.pointee.headSerial)
    let hasRequest = requestBegun && half.pointee.hasRequest && copy.pointee.serial == half.pointee.headSerial
    let reused = sequence > 0
    // From its second exchange on, the hooks prefetch the lines an exchange touches
    // (`ExchangeLines`): while they read its socket's bytes, so not for TLS, whose plaintext comes
    // from the SSL hooks (the socket's watch flags are off: `Traffic.updateWatch`).
    if !reused && !context.isTLS { cnm_set_exchanging(context.core.pointee.fd, true) }
    RawRecord.emit { record in  // every field an http record reads (see `RawRecord.emit`)
      defer { captureReplayTemplate(record, sequence: sequence, context: context) }
      record.pointee.kind = RawRecord.Kind.http
      // The wall clock at the connection's start plus the monotonic time since: one clock read
      // per exchange fewer (~20 ns of vDSO), and records of one connection never go back in time.
      record.pointee.startUnixNanoseconds =
        context.core.pointee.startUnixNanoseconds &+ (start &- context.core.pointee.startNanoseconds)
      record.pointee.durationNanoseconds = response.end &- start
      let copyStart = reused ? ConnectionCore.reusedCopyStart : ConnectionCore.httpCopyStart
      (UnsafeMutableRawPointer(record.pointer(to: \.core)!) + copyStart).copyMemory(
        from: UnsafeRawPointer(context.core) + copyStart, byteCount: MemoryLayout<ConnectionCore>.size &- copyStart)
      record.pointee.core.isTLS = context.isTLS ? 1 : 0
      if hasRequest {
        HTTPHead.copyReadableBytes(from: copy.pointer(to: \.head)!, to: record.pointer(to: \.httpRequest)!)
      } else {
        record.pointee.httpRequest.clearScalars()  // the response came before the request's head ended
      }
      record.pointee.httpStatus = response.status
      record.pointee.httpResponseCutShort = response.cutShort
      record.pointee.httpFirstByteNanoseconds = response.firstByte == 0 ? 0 : response.firstByte &- start &+ 1
      record.pointee.httpRequestBytes = requestBegun ? half.pointee.requestBytes : 0
      record.pointee.httpResponseBytes = response.bytes
      record.pointee.httpReused = reused
      record.pointee.httpProtocol =
        !hasRequest ? RawRecord.HTTPVersion.unknown
        : copy.pointee.head.minorVersion == 0 ? RawRecord.HTTPVersion.http10 : RawRecord.HTTPVersion.http11
      record.pointee.grpcStatus = -1
    }
  }
}
