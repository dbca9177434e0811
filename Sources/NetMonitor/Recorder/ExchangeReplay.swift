import CNetMonitor

/// The Swift side of the hooks' recording of simple exchanges (`cnm_replay_take`, cnetmonitor.h):
/// once this path has recorded an exchange on a keep-alive connection, with nothing under way
/// after it, the hooks record the next ones themselves while they are simple (a GET head alone,
/// answered by a head and a body of known length), with the connection's part of that exchange's
/// record as a template: from its socket's bytes, or over TLS from the plaintext of its SSL calls
/// (`cnm_replay_take_plaintext`). Swift arms the replay at the end of the call that recorded such
/// an exchange, and takes over at the start of every call it sees: what the hooks did then counts
/// as if these parsers had seen it.
///
/// Plain data in ``HTTPExchanges``; all zero is "nothing replayed, nothing to arm".
struct ExchangeReplay {
  /// Replays counted into each direction's counters (the state's count when they last took over).
  var requestsTaken: UInt32 = 0
  var responsesTaken: UInt32 = 0
  /// The exchange whose record is in the template, + 1; 0 when there is none to arm with.
  var templateSequence: UInt32 = 0
  /// The threads that last moved each direction's bytes: the replay is armed only when one thread
  /// moved both (its owner), so that no other thread is inside this connection's parsers.
  var requestThread: UnsafeRawPointer?
  var responseThread: UnsafeRawPointer?
}

/// The interim answer the hooks take (`CNM_REPLAY_INTERIM`).
private let replayInterim = Array(CNM_REPLAY_INTERIM.utf8)

extension UnsafeMutablePointer where Pointee == HTTPExchanges {
  /// Takes over from the replay before a call's bytes are parsed: stops it, counts the exchanges it
  /// recorded into the counters of the direction the bytes go (`requests`, `responses`, or both at
  /// close), and has what it took of an exchange it could not finish parsed, as of when it moved:
  /// the first part of a request head whose rest was not taken, a request whose response was not
  /// simple, the interim answers it took before a response, a
  /// response it stopped taking halfway (its head and
  /// the body bytes it counted, or where it was in a chunked body), from the copies the hooks
  /// made of their heads (and a request's body bytes it counted, or where it was in its chunked
  /// body). Each direction's part is that direction's to take, or the owner's (which moved the
  /// bytes), or the closing thread's.
  func takeOverFromReplay(requests: Bool, responses: Bool, context: ExchangeContext) {
    let head = context.head
    let state = cnm_replay_stop(head)
    let thread = cnm_thread_identity()
    if requests { pointee.replay.requestThread = thread } else { pointee.replay.responseThread = thread }
    guard state != 0 else { return }  // never armed
    let replays = UInt32(truncatingIfNeeded: state >> UInt64(CNM_REPLAY_COUNT_SHIFT))
    let owner = head.pointee.replay_owner == thread
    if requests || owner {
      pointee.requestsBegun &+= replays &- pointee.replay.requestsTaken
      pointee.replay.requestsTaken = replays
      if state & UInt64(CNM_REPLAY_PARTIAL) != 0, cnm_replay_claim(head, UInt64(CNM_REPLAY_PARTIAL)) != 0 {
        // The first part of a request head, kept until its blank line would come.
        let staged = UnsafeRawBufferPointer(
          start: head.pointer(to: \.replay_request_staging), count: Int(head.pointee.replay_request_staged))
        requestBytes(staged, now: head.pointee.replay_start, context: context)
      }
      if state & UInt64(CNM_REPLAY_REQUEST_PENDING) != 0, cnm_replay_claim(head, UInt64(CNM_REPLAY_REQUEST_PENDING)) != 0 {
        let request = head.pointee.replay_request
        let start = head.pointee.replay_start
        let chunked = request.framing.chunked_at != 0
        Self.kept(
          UnsafeRawPointer(head.pointer(to: \.replay_request_bytes)!), length: request.length,
          bodyCounted: chunked ? 0 : request.framing.content_length &- head.pointee.replay_request_body_left
        ) { requestBytes($0, now: start, context: context) }
        if chunked {
          Self.resume(pointer(to: \.requests)!, head.pointee.replay_request_chunked) { requestBytes($0, now: start, context: context) }
        }
      }
    }
    if responses || owner {
      let taken = replays &- pointee.replay.responsesTaken
      pointee.responsesEnded &+= taken
      pointee.responses.finalHeads &+= taken
      pointee.replay.responsesTaken = replays
      let responseParts = UInt64(CNM_REPLAY_RESPONSE_PENDING | CNM_REPLAY_INTERIMS)
      let parts = state & responseParts != 0 ? cnm_replay_claim(head, responseParts) : 0
      let firstByte = head.pointee.replay_first_byte
      // The interim answers it took (100 Continue), all at the first one's time.
      for _ in 0..<(parts & UInt64(CNM_REPLAY_INTERIMS)) / UInt64(CNM_REPLAY_INTERIM_ONE) {
        replayInterim.withUnsafeBytes { responseBytes($0, now: firstByte, context: context) }
      }
      if parts & UInt64(CNM_REPLAY_RESPONSE_PENDING) != 0 {
        let response = head.pointee.replay_response
        let chunked = response.framing.chunked_at != 0
        // Its body: its Content-Length's, chunked, or (with neither: it has one, being under
        // way) one that runs to the close.
        let counted =
          chunked ? 0
          : response.framing.framed_at != 0 ? response.framing.content_length &- head.pointee.replay_body_left
          : head.pointee.replay_body_to_close
        Self.kept(UnsafeRawPointer(head.pointer(to: \.replay_response_bytes)!), length: response.length, bodyCounted: counted) {
          responseBytes($0, now: firstByte, context: context)
        }
        if chunked {
          Self.resume(pointer(to: \.responses)!, head.pointee.replay_chunked) { responseBytes($0, now: firstByte, context: context) }
        }
      }
    }
  }

  /// A chunked body goes on from where the hooks were in it; when it ended there, its last byte
  /// (an LF, which the hooks' state is from before) goes to `parse` to end it.
  private static func resume(
    _ parser: UnsafeMutablePointer<HTTPStreamParser>, _ body: cnm_chunked_body, _ parse: (UnsafeRawBufferPointer) -> Void
  ) {
    parser.pointee.resume(body)
    guard body.ended != 0 else { return }
    withUnsafeBytes(of: UInt8(ascii: "\n")) { parse($0) }
  }

  /// What the hooks took of a message they did not finish, for `parse`: the head they kept
  /// (`length` bytes at `bytes`), then as many zeros as the body bytes they counted (a body of
  /// known length is only counted, as for `sendfile`).
  private static func kept(
    _ bytes: UnsafeRawPointer, length: UInt16, bodyCounted: UInt64, _ parse: (UnsafeRawBufferPointer) -> Void
  ) {
    parse(UnsafeRawBufferPointer(start: bytes, count: Int(length)))
    Traffic.Bytes.unknown.forEachPiece(upTo: Int(bodyCounted), parse)
  }

  /// Copies the record of exchange `sequence` (its slot, as written) into the replay's template
  /// when the hooks may record the exchanges after it: not the connection's first (whose record
  /// has no reused connection), HTTP/1.1 or 1.0 (the hooks write each record's version from its
  /// request), answered by a final response, and nothing begun after it on either side. Over TLS too: the hooks then take the plaintext of the SSL calls. The hooks reuse its first line and its connection's part;
  /// ``armReplay(context:)`` then decides at the end of the call.
  func captureReplayTemplate(
    _ record: UnsafeMutablePointer<RawRecord>, sequence: UInt32, context: ExchangeContext
  ) {
    guard sequence > 0, record.pointee.httpStatus >= 200, !record.pointee.httpResponseCutShort,
      record.pointee.httpProtocol == RawRecord.HTTPVersion.http11
        || record.pointee.httpProtocol == RawRecord.HTTPVersion.http10,
      pointee.requestsBegun == sequence &+ 1, pointee.responsesEnded == sequence &+ 1
    else { return }
    let template = context.head.pointer(to: \.replay)!
    let identity = MemoryLayout<RawRecord>.offset(of: \.core)! + ConnectionCore.reusedCopyStart
    let identityLength = MemoryLayout<RawRecord>.offset(of: \.httpRequest)! - identity
    let storage = UnsafeMutableRawPointer(template.pointer(to: \.record)!)
    storage.copyMemory(from: record, byteCount: 64)
    (storage + 64).copyMemory(from: UnsafeRawPointer(record) + identity, byteCount: identityLength)
    template.pointee.identity_length = UInt16(identityLength)
    template.pointee.run_length = 0  // the hooks write the request head after it
    template.pointee.first_exchange = false
    pointee.replay.templateSequence = sequence &+ 1
  }

  /// Arms the replay at the end of a call that put an exchange's record into the template, when
  /// nothing was parsed after it (both parsers are between messages, and the response parser
  /// expects no request kind it has not taken), this thread moved both directions' bytes, and
  /// nothing the replay took before is still to be parsed.
  func armReplay(context: ExchangeContext) {
    let sequence = pointee.replay.templateSequence &- 1
    pointee.replay.templateSequence = 0
    let thread = cnm_thread_identity()
    guard pointee.requestsBegun == sequence &+ 1, pointee.responsesEnded == sequence &+ 1,
      pointee.requests.isBetweenMessages, pointee.responses.isBetweenMessages,
      cnm_load_u32(pointer(to: \.requestKindsKnown)!) == pointee.requestKindsTaken,
      pointee.replay.requestThread == thread, pointee.replay.responseThread == thread
    else { return }
    let state = cnm_load_u64(context.head.pointer(to: \.replay_state)!)
    let pending = CNM_REPLAY_REQUEST_PENDING | CNM_REPLAY_RESPONSE_PENDING | CNM_REPLAY_INTERIMS | CNM_REPLAY_PARTIAL
    guard state & UInt64(CNM_REPLAY_PHASE | pending) == UInt64(CNM_REPLAY_OFF) else { return }
    context.head.pointee.replay.unix_offset =
      context.core.pointee.startUnixNanoseconds &- context.core.pointee.startNanoseconds
    context.head.pointee.requests_received = context.core.pointee.role == ConnectionCore.Role.server ? 1 : 0
    _ = cnm_replay_arm(context.head, state)
  }
}

extension HTTPStreamParser {
  /// Goes on with a chunked body of which the hooks read the part in `body` (`cnm_chunked_body`,
  /// which reads one in this parser's states): once its head was parsed, this parser is where the
  /// hooks are, those bytes counted in the message's (of a body that ended, where they were before
  /// its last byte, an LF, which is not counted).
  mutating func resume(_ body: cnm_chunked_body) {
    guard phase == .chunkSize, messageBytes > 0 else { return }  // the head said it is chunked
    let resumed: Phase
    switch Int(body.phase) {
    case CNM_CHUNKED_SIZE: resumed = .chunkSize
    case CNM_CHUNKED_SIZE_END: resumed = .chunkSizeEnd
    case CNM_CHUNKED_EXTENSION: resumed = .chunkExtension
    case CNM_CHUNKED_DATA: resumed = .chunkData
    case CNM_CHUNKED_DATA_END: resumed = .chunkDataEnd
    case CNM_CHUNKED_TRAILER_START: resumed = .trailerLineStart
    case CNM_CHUNKED_TRAILER_LINE: resumed = .trailerLine
    default: return
    }
    phase = resumed
    number = body.size
    remaining = body.remaining
    matchIndex = body.has_digits
    crPending = body.cr_pending != 0
    scanBytes = body.line_bytes
    messageBytes &+= body.bytes &- UInt64(body.ended)
  }
}
