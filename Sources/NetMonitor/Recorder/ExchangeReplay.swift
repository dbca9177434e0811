import CNetMonitor

/// The Swift side of the hooks' replay of repeated exchanges (`cnm_replay_take`, cnetmonitor.h):
/// after an exchange that repeated the one before it, byte for byte on both sides (but for a body
/// of known length, only counted), the hooks record the next ones that repeat it themselves, from
/// a template of its record. Swift arms the
/// replay at the end of the call that recorded such an exchange, and takes over at the start of
/// every call it sees: what the hooks did then counts as if these parsers had seen it.
///
/// Plain data in ``HTTPExchanges``; all zero is "nothing replayed, nothing to arm".
struct ExchangeReplay {
  /// Replays counted into each direction's counters (the state's count when they last took over).
  var requestsTaken: UInt32 = 0
  var responsesTaken: UInt32 = 0
  /// The head serials of the last exchange recorded: the next is a repeat when its are the same.
  var recordedRequestSerial: UInt32 = 0
  var recordedResponseSerial: UInt32 = 0
  /// The exchange whose record is in the template, + 1; 0 when there is none to arm with.
  var templateSequence: UInt32 = 0
  /// Its response's bytes, head and body.
  var templateResponseBytes: UInt64 = 0
  /// The threads that last moved each direction's bytes: the replay is armed only when one thread
  /// moved both (its owner), so that no other thread is inside this connection's parsers.
  var requestThread: UnsafeRawPointer?
  var responseThread: UnsafeRawPointer?
}

extension UnsafeMutablePointer where Pointee == HTTPExchanges {
  /// Takes over from the replay before a call's bytes are parsed: stops it, counts the exchanges it
  /// recorded into the counters of the direction the bytes go (`requests`, `responses`, or both at
  /// close), and has what it took of an exchange it could not finish parsed, as of when it moved:
  /// a request whose response did not repeat, a response that stopped repeating halfway (its head
  /// and the body bytes it counted). Each direction's part is that direction's to take, or the
  /// owner's (which moved the bytes), or the closing thread's.
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
      if state & UInt64(CNM_REPLAY_REQUEST_PENDING) != 0, cnm_replay_claim(head, UInt64(CNM_REPLAY_REQUEST_PENDING)) {
        requestBytes(pointer(to: \.requests.headMemo)!.rememberedBytes, now: head.pointee.replay_start, context: context)
      }
    }
    if responses || owner {
      let taken = replays &- pointee.replay.responsesTaken
      pointee.responsesEnded &+= taken
      pointee.responses.finalHeads &+= taken
      pointee.replay.responsesTaken = replays
      if state & UInt64(CNM_REPLAY_RESPONSE_PENDING) != 0, cnm_replay_claim(head, UInt64(CNM_REPLAY_RESPONSE_PENDING)) {
        let firstByte = head.pointee.replay_first_byte
        responseBytes(pointer(to: \.responses.headMemo)!.rememberedBytes, now: firstByte, context: context)
        let counted = head.pointee.replay.body_length &- head.pointee.replay_body_left
        Traffic.Bytes.unknown.forEachPiece(upTo: Int(counted)) { responseBytes($0, now: firstByte, context: context) }
      }
    }
  }

  /// Copies the record of exchange `sequence` (its slot, as written) into the replay's template
  /// when the exchange can be replayed: it repeated the exchange recorded before it (the same
  /// request head and response head, each compared whole: ``HTTPHeadMemo``), on a connection in
  /// plaintext, with a request no longer than a remembered head, a final response, and nothing
  /// begun after it on either side. ``armReplay(context:)`` then decides at the end of the call.
  func captureReplayTemplate(
    _ record: UnsafeMutablePointer<RawRecord>, sequence: UInt32, context: ExchangeContext
  ) {
    let requestSerial = element(\.requestHalves, sequence).pointee.headSerial
    let responseSerial = pointee.responses.headSerial
    let repeated =
      requestSerial == pointee.replay.recordedRequestSerial && responseSerial == pointee.replay.recordedResponseSerial
    pointee.replay.recordedRequestSerial = requestSerial
    pointee.replay.recordedResponseSerial = responseSerial
    guard repeated, sequence > 0, !context.isTLS, record.pointee.httpStatus >= 200,
      record.pointee.httpRequestBytes <= UInt64(HTTPHeadMemo.capacity),
      pointee.requestsBegun == sequence &+ 1, pointee.responsesEnded == sequence &+ 1
    else { return }
    let template = context.head.pointer(to: \.replay)!
    let runOffset = MemoryLayout<RawRecord>.offset(of: \.core)! + ConnectionCore.reusedCopyStart
    let request = MemoryLayout<RawRecord>.offset(of: \.httpRequest)!
    let runEnd =
      request + MemoryLayout<HTTPHead>.offset(of: \.text)! + UnsafePointer(record.pointer(to: \.httpRequest)!).textLength
    let runLength = runEnd - runOffset
    guard 64 + runLength <= Int(CNM_REPLAY_RECORD_BYTES) else { return }
    let storage = UnsafeMutableRawPointer(template.pointer(to: \.record)!)
    storage.copyMemory(from: record, byteCount: 64)
    (storage + 64).copyMemory(from: UnsafeRawPointer(record) + runOffset, byteCount: runLength)
    template.pointee.run_offset = UInt16(runOffset)
    template.pointee.run_length = UInt16(runLength)
    template.pointee.request_length = UInt16(record.pointee.httpRequestBytes)
    pointee.replay.templateResponseBytes = record.pointee.httpResponseBytes
    pointee.replay.templateSequence = sequence &+ 1
  }

  /// Arms the replay at the end of a call that put an exchange's record into the template, when
  /// nothing was parsed after it (both parsers are between messages, with its heads), its request
  /// was its head alone, its response a head and a `Content-Length` body, this thread moved both
  /// directions' bytes, and nothing the replay took before is still to be parsed.
  func armReplay(context: ExchangeContext) {
    let sequence = pointee.replay.templateSequence &- 1
    pointee.replay.templateSequence = 0
    let thread = cnm_thread_identity()
    let template = context.head.pointer(to: \.replay)!
    let requestMemo = pointer(to: \.requests.headMemo)!
    let responseMemo = pointer(to: \.responses.headMemo)!
    let responseHead = pointer(to: \.responses.head)!
    let responseLength = UInt64(responseMemo.pointee.length)
    guard pointee.requestsBegun == sequence &+ 1, pointee.responsesEnded == sequence &+ 1,
      pointee.requests.isBetweenMessages, pointee.responses.isBetweenMessages,
      pointee.requests.headSerial == pointee.replay.recordedRequestSerial,
      pointee.responses.headSerial == pointee.replay.recordedResponseSerial,
      element(\.requestHalves, sequence).pointee.requestKind == .ordinary,
      pointee.requests.head.bodyFraming == .none,
      pointee.replay.requestThread == thread, pointee.replay.responseThread == thread,
      requestMemo.pointee.length > 0, requestMemo.pointee.length == template.pointee.request_length,
      responseLength > 0, responseHead.pointee.bodyFraming == .contentLength,
      pointee.replay.templateResponseBytes == responseLength &+ responseHead.pointee.contentLengthValue
    else { return }
    let state = cnm_load_u64(context.head.pointer(to: \.replay_state)!)
    let pending = CNM_REPLAY_REQUEST_PENDING | CNM_REPLAY_RESPONSE_PENDING
    guard state & UInt64(CNM_REPLAY_PHASE | pending) == UInt64(CNM_REPLAY_OFF) else { return }
    template.pointee.response_length = UInt16(responseLength)
    template.pointee.body_length = responseHead.pointee.contentLengthValue
    template.pointee.unix_offset =
      context.core.pointee.startUnixNanoseconds &- context.core.pointee.startNanoseconds
    context.head.pointee.replay_request = requestMemo.rememberedBytes.baseAddress?.assumingMemoryBound(to: UInt8.self)
    context.head.pointee.replay_response =
      responseMemo.rememberedBytes.baseAddress?.assumingMemoryBound(to: UInt8.self)
    context.head.pointee.requests_received = context.core.pointee.role == ConnectionCore.Role.server ? 1 : 0
    _ = cnm_replay_arm(context.head, state)
  }
}
