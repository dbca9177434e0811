/// An incremental HTTP/1.x framing parser for the bytes of one direction of one connection, fed from
/// inside `read`/`write`/`send`/`recv`/`SSL_read`/`SSL_write` hooks in arbitrary fragments.
///
/// It finds where each request or response starts, where its head ends and where its body ends, and
/// captures the few facts a monitor records (``HTTPHead``). It is plain data (`_isPOD`) and all zero bytes
/// are its initial state, so it can live in preallocated, zero-filled memory. Feeding it never allocates,
/// locks, does I/O or traps: malformed or non-HTTP bytes make it report ``HTTPStreamEvent/gaveUp`` once
/// and ignore the rest of the stream, and a stream whose first bytes are not a request line or status
/// line (TLS, HTTP/2, a binary protocol) is given up within its first few bytes.
///
/// Start and header lines that arrive whole are taken a line at a time (``scanLines(_:at:count:)``),
/// text sixteen bytes at a time; a line cut across calls, chunk-size lines and trailers are scanned byte
/// by byte. A body of known length (or a chunk's data, or a close-delimited body) costs O(1) per
/// ``feed(_:as:onEvent:)`` call. A head that repeats the last one byte for byte, in one buffer, is
/// compared rather than parsed (``HTTPHeadMemo``).
///
/// Responses to `HEAD` and `CONNECT` are framed by their request: the caller reports each request to the
/// response direction's parser with ``expectResponse(to:)`` (a FIFO of up to ``pendingCapacity``
/// unanswered requests; later ones are treated as ordinary). The caller must not use one parser from two
/// threads at once; the two directions are two parsers.
public struct HTTPStreamParser: Sendable {
  /// The largest head (start line and header lines) accepted, and likewise the largest chunk-size line
  /// (with extensions) or trailer section; beyond it the parser gives up.
  public static var maxHeadBytes: UInt32 { 256 * 1024 }
  /// How many unanswered requests ``expectResponse(to:)`` remembers.
  public static var pendingCapacity: Int { 32 }
  /// The largest `Content-Length` accepted (2⁶²); larger values make the parser give up.
  public static var maxContentLength: UInt64 { 1 << 62 }

  // Layout: widest fields first, the head last, sized so there is no interior padding and the zero
  // bytes of preallocated memory compare equal to `init()`.

  /// The number being parsed: a `Content-Length` element, a chunk size, or (for `Host`) the length
  /// without trailing whitespace.
  var number: UInt64
  /// Body bytes still expected: of a `Content-Length` body, or of the current chunk.
  var remaining: UInt64
  /// Bytes of the current message that arrived in earlier ``feed(_:as:onEvent:)`` calls.
  var messageBytes: UInt64
  /// FIFO of unanswered requests' ``HTTPRequestKind`` raw values, two bits each, oldest lowest.
  var pendingKinds: UInt64
  /// Bytes scanned in the current head, or chunk-size line and trailer section.
  var scanBytes: UInt32
  /// Changes whenever ``head`` is parsed anew, and only then (not when a head repeats the last one,
  /// ``HTTPHeadMemo``): whoever copied the head and its serial knows whether the copy is still
  /// the head, but for its ``HTTPHead/bodyFraming`` (decided for each message: a response's by
  /// the request it answers). 0 before the first head.
  public internal(set) var headSerial: UInt32
  /// Final response heads read (each took the oldest ``expectResponse(to:)`` entry, if any).
  var finalHeads: UInt32
  /// Where the parser is.
  var phase: Phase
  /// The header whose value is being parsed.
  var field: HeaderField
  /// Progress in the version literal or status code; in a value, whether a digit was seen.
  var matchIndex: UInt8
  /// Valid bytes in ``scratch``; ``scratchCapacity`` + 1 when the text was too long to match anything.
  var scratchLength: UInt8
  /// Entries in ``pendingKinds``.
  var pendingCount: UInt8
  /// A CR ended the previous byte; the next must be LF.
  var crPending: Bool
  /// A field value's first non-whitespace byte was seen.
  var valueStarted: Bool
  /// Inside the parameters of a transfer coding or connection option (after `;`).
  var inParameters: Bool
  /// Whitespace followed the digits of a `Content-Length` element; another digit is an error.
  var digitsEnded: Bool
  /// A header name or list token as sent, compared case-insensitively with the few names that matter.
  var scratch: InlineArray<27, UInt8>
  /// The head of the current message (or of the last one, between messages).
  public internal(set) var head: HTTPHead
  /// The bytes ``head`` was parsed from, when they arrived in one buffer: the same bytes again are
  /// compared, not parsed.
  var headMemo: HTTPHeadMemo

  /// Capacity of ``scratch``: longer than any header name or token the parser matches.
  static var scratchCapacity: UInt8 { 27 }

  /// A parser that has seen nothing yet; equal to all zero bytes.
  public init() {
    number = 0
    remaining = 0
    messageBytes = 0
    pendingKinds = 0
    scanBytes = 0
    headSerial = 0
    finalHeads = 0
    phase = .idle
    field = .other
    matchIndex = 0
    scratchLength = 0
    pendingCount = 0
    crPending = false
    valueStarted = false
    inParameters = false
    digitsEnded = false
    scratch = InlineArray(repeating: 0)
    head = HTTPHead()
    headMemo = HTTPHeadMemo()
  }

  /// Whether the parser gave up on this stream (``HTTPStreamEvent/gaveUp`` was reported).
  public var hasGivenUp: Bool { phase == .gaveUp }

  /// Whether the stream switched to another protocol (``HTTPStreamEvent/switchedProtocols``, or
  /// ``enterTunnel()``).
  public var isTunnel: Bool { phase == .tunnel }

  /// Whether the parser is between messages: nothing seen yet, or the last message complete.
  public var isBetweenMessages: Bool { phase == .idle }

  /// How many requests reported with ``expectResponse(to:)`` await their final response.
  public var pendingResponseCount: Int { Int(pendingCount) }

  /// Feeds the next bytes of the stream and reports each framing event found in them, in order.
  ///
  /// - Parameters:
  ///   - bytes: The bytes, in stream order, as the hooked call transferred them; any fragment size.
  ///   - kind: What the stream carries; the same on every call for one stream.
  ///   - onEvent: Called synchronously for each event, with the head of the message it belongs to
  ///     (borrowed: nothing is copied). It runs on the hooked thread: it must not allocate, lock or do
  ///     I/O either.
  public mutating func feed(
    _ bytes: UnsafeRawBufferPointer, as kind: HTTPDirectionKind, onEvent: HTTPStreamEventHandler
  ) {
    guard let base = bytes.baseAddress else { return }
    let count = bytes.count
    var index = 0
    var segmentStart = 0  // first byte of the current message within `bytes`
    while index < count {
      switch phase {
      case .gaveUp, .tunnel:
        return
      case .idle:
        let byte = base.load(fromByteOffset: index, as: UInt8.self)
        if byte == HTTPByteClass.cr || byte == HTTPByteClass.lf {
          index &+= 1  // blank lines between messages belong to none (RFC 9112 §2.2)
          continue
        }
        // The cheapest sniff: TLS (0x16), HTTP/2's frames and most binary protocols fail here.
        let plausible = kind == .requests ? HTTPByteClass.isMethod(byte) : byte == 0x48  // H
        guard plausible else { return giveUp(onEvent: onEvent) }
        segmentStart = index
        if let length = headMemo.match(base + index, available: count &- index) {
          // The same head as the last one: ``head`` holds what these bytes parse to.
          beginMessage(kind, keepingHead: true)
          report(.messageStarted, to: onEvent)
          index &+= length
          endHead(kind, at: index, segmentStart: &segmentStart, onEvent: onEvent)
          continue
        }
        beginMessage(kind, keepingHead: false)
        report(.messageStarted, to: onEvent)
      case .contentBody, .chunkData:
        let taken = min(UInt64(count &- index), remaining)
        remaining &-= taken
        index &+= Int(taken)
        if remaining == 0 {
          if phase == .chunkData {
            phase = .chunkDataEnd
          } else {
            completeMessage(at: index, segmentStart: &segmentStart, onEvent: onEvent)
          }
        }
      case .untilClose:
        index = count
      default:
        var outcome = ScanOutcome.more
        if !crPending {
          // Whole lines and runs are consumed without a call per byte; what `scanLines` leaves (a line
          // cut by the end of the buffer, anything unusual) goes through `scan` one byte at a time.
          let start = index
          outcome = scanLines(base, at: &index, count: count)
          let scanned = Int(scanBytes) &+ (index &- start)
          guard scanned <= Int(Self.maxHeadBytes) else { return giveUp(onEvent: onEvent) }
          scanBytes = UInt32(truncatingIfNeeded: scanned)
        }
        if outcome == .more {
          if index == count { break }
          let byte = base.load(fromByteOffset: index, as: UInt8.self)
          index &+= 1
          outcome = scan(byte)
        }
        switch outcome {
        case .more:
          break
        case .invalid:
          giveUp(onEvent: onEvent)
          return
        case .headEnded:
          // A head that began in this buffer is remembered (one that began in an earlier one is not
          // contiguous in memory: its message has bytes counted already).
          if messageBytes == 0 { headMemo.remember(base + segmentStart, count: index &- segmentStart) }
          endHead(kind, at: index, segmentStart: &segmentStart, onEvent: onEvent)
        case .messageEnded:
          completeMessage(at: index, segmentStart: &segmentStart, onEvent: onEvent)
        }
      }
    }
    switch phase {
    case .idle, .gaveUp, .tunnel: break
    default: messageBytes &+= UInt64(count &- segmentStart)
    }
  }

  /// Ends the stream (the connection closed): completes a close-delimited response body, reports a
  /// message cut short as ``HTTPStreamEvent/messageIncomplete(totalBytes:)``, and resets the parser to
  /// its zero state but for ``headSerial``, which goes on (a copy made before must not match a head
  /// parsed after).
  public mutating func finish(onEvent: HTTPStreamEventHandler) {
    switch phase {
    case .idle, .gaveUp, .tunnel: break
    case .untilClose: report(.messageComplete(totalBytes: messageBytes), to: onEvent)
    default: report(.messageIncomplete(totalBytes: messageBytes), to: onEvent)
    }
    let serial = headSerial
    self = HTTPStreamParser()
    headSerial = serial
  }

  /// The response under way turned out to answer a `HEAD` request (reported too late for its head:
  /// see `HTTPExchanges`): when none of the body its `Content-Length` announced was read yet, it
  /// ends where its head ended. Returns whether it did.
  mutating func endAsAnswerToHEAD(onEvent: HTTPStreamEventHandler) -> Bool {
    guard phase == .contentBody, remaining == head.contentLengthValue else { return false }
    head.answeredRequestKind = .head
    var segmentStart = 0
    completeMessage(at: 0, segmentStart: &segmentStart, onEvent: onEvent)
    return true
  }

  /// Reports a request sent (or received) on this connection to the parser of its responses, so that the
  /// response to `HEAD` is known to have no body and a 2xx response to `CONNECT` to start a tunnel. Call
  /// it once per request, in order, when the request parser reports ``HTTPStreamEvent/headComplete``
  /// (with ``HTTPHead/requestKind``). Informational (1xx other than 101) responses do not consume an
  /// entry. Beyond ``pendingCapacity`` unanswered requests, further entries are dropped.
  public mutating func expectResponse(to request: HTTPRequestKind) {
    guard Int(pendingCount) < Self.pendingCapacity else { return }
    pendingKinds |= UInt64(request.rawValue & 3) << (UInt64(pendingCount) &* 2)
    pendingCount &+= 1
  }

  /// Stops parsing: the connection now carries another protocol (the other direction's parser reported
  /// ``HTTPStreamEvent/switchedProtocols``). The rest of the stream is ignored, from byte `start`
  /// of the bytes of the last ``feed(_:as:onEvent:)`` call (``tunnelStart``): 0 before the next
  /// call's, their count after the last call's.
  public mutating func enterTunnel(at start: Int = 0) {
    if phase != .gaveUp {
      phase = .tunnel
      scanBytes = UInt32(truncatingIfNeeded: start)
    }
  }

  /// Once the stream is a tunnel: where the tunnel's bytes begin in the bytes of the
  /// ``feed(_:as:onEvent:)`` call that switched it (after a 101 or a CONNECT's 2xx head), or 0
  /// when it was switched by ``enterTunnel()`` (at the next call's first byte). An HTTP/2 upgrade
  /// (`Upgrade: h2c`) reads its frames from there.
  public var tunnelStart: Int { phase == .tunnel ? Int(scanBytes) : 0 }

  // MARK: Message boundaries

  /// Starts a message: its head is parsed from scratch, or (`keepingHead`) is the same as the last
  /// one (``headMemo``).
  @inline(__always)
  mutating func beginMessage(_ kind: HTTPDirectionKind, keepingHead: Bool) {
    if !keepingHead {
      head.clearScalars()  // the text is only read up to its lengths
      headMemo.forget()
      headSerial &+= 1
    }
    messageBytes = 0
    scanBytes = 0
    number = 0
    matchIndex = 0
    crPending = false
    phase = kind == .requests ? .requestMethod : .statusVersion
  }

  mutating func completeMessage(
    at index: Int, segmentStart: inout Int, onEvent: HTTPStreamEventHandler
  ) {
    let total = messageBytes &+ UInt64(index &- segmentStart)
    messageBytes = 0
    segmentStart = index
    phase = .idle
    report(.messageComplete(totalBytes: total), to: onEvent)
  }

  /// Hands `event` and a pointer to the head in place to `onEvent`: a head passed by value (even
  /// `borrowing`) made the compiler copy its ~800 bytes for every event a handler read it in
  /// (callgrind: some 700 instructions of `memcpy` per exchange).
  @inline(__always)
  mutating func report(_ event: HTTPStreamEvent, to onEvent: HTTPStreamEventHandler) {
    withUnsafeMutablePointer(to: &head) { head in onEvent(event, UnsafePointer(head)) }
  }

  mutating func giveUp(onEvent: HTTPStreamEventHandler) {
    phase = .gaveUp
    report(.gaveUp, to: onEvent)
  }

  /// Decides the body framing once the head is complete (RFC 9112 §6.3), reports the head, and moves on
  /// to the body, or completes a message without one.
  mutating func endHead(
    _ kind: HTTPDirectionKind, at index: Int, segmentStart: inout Int,
    onEvent: HTTPStreamEventHandler
  ) {
    var framing = HTTPBodyFraming.none
    var switchesProtocols = false
    if kind == .requests {
      if head.requestKind == .connect {
        framing = .none
      } else if head.hasTransferEncoding {
        // A request whose final coding is not chunked cannot be framed (RFC 9112 §6.3 item 4).
        guard head.isChunked else { return giveUp(onEvent: onEvent) }
        framing = .chunked
      } else if head.hasContentLength {
        framing = .contentLength
      }
    } else if head.status >= 200 || head.status == 101 {
      let answered = popPendingRequest()
      head.answeredRequestKind = answered
      if head.status == 101 || (answered == .connect && head.status < 300) {
        switchesProtocols = true
      } else if answered == .head || head.status == 204 || head.status == 304 {
        framing = .none
      } else if head.hasTransferEncoding {
        framing = head.isChunked ? .chunked : .untilClose
      } else if head.hasContentLength {
        framing = .contentLength
      } else {
        framing = .untilClose
      }
    }
    head.bodyFraming = framing
    report(.headComplete, to: onEvent)
    switch framing {
    case .none:
      completeMessage(at: index, segmentStart: &segmentStart, onEvent: onEvent)
      if switchesProtocols {
        phase = .tunnel
        scanBytes = UInt32(truncatingIfNeeded: index)  // ``tunnelStart``
        report(.switchedProtocols, to: onEvent)
      }
    case .contentLength:
      if head.contentLengthValue == 0 {
        completeMessage(at: index, segmentStart: &segmentStart, onEvent: onEvent)
      } else {
        remaining = head.contentLengthValue
        phase = .contentBody
      }
    case .chunked:
      beginChunkSizeLine()
    case .untilClose:
      phase = .untilClose
    }
  }

  mutating func popPendingRequest() -> HTTPRequestKind {
    finalHeads &+= 1
    guard pendingCount > 0 else { return .ordinary }
    let raw = UInt8(truncatingIfNeeded: pendingKinds & 3)
    pendingKinds >>= 2
    pendingCount &-= 1
    return HTTPRequestKind(rawValue: raw) ?? .ordinary
  }

  // MARK: Byte-by-byte scanning

  /// What the scanned bytes did.
  enum ScanOutcome {
    case more, invalid, headEnded, messageEnded
  }

  /// Scans one byte of a head, chunk-size line, chunk-data terminator or trailer section.
  @inline(__always)
  mutating func scan(_ byte: UInt8) -> ScanOutcome {
    scanBytes &+= 1
    if scanBytes > Self.maxHeadBytes { return .invalid }
    if crPending {
      crPending = false
      if byte != HTTPByteClass.lf { return .invalid }  // a bare CR (RFC 9112 §2.2)
    } else if byte == HTTPByteClass.cr {
      crPending = true
      return .more
    }
    switch phase {
    case .requestMethod, .requestTarget, .requestVersion, .statusVersion, .statusCode, .statusReason:
      return scanStartLine(byte)
    case .headerLineStart, .headerName, .headerValue, .headerIgnoredLine:
      return scanHeaderLine(byte)
    default:
      return scanChunked(byte)
    }
  }
}
