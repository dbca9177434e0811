import CNetMonitor
import Glibc

/// What the hooks do for a tracked connection, out of line so the hooks themselves stay a bounds
/// check and a byte load for every other descriptor. Nothing here allocates, locks or does I/O,
/// and errno is put back wherever a call could change it.
enum Traffic {
  /// `count` bytes (> 0) arrived on `slot`'s socket (`read`, `recv`, …), in `bytes`. Called by the
  /// C hooks only while Swift watches (see `cnm_connection_head`).
  @inline(__always)
  static func received(_ slot: UnsafeMutablePointer<ConnectionSlot>, _ bytes: Bytes, _ count: Int) {
    establishIfConnecting(slot)
    cnm_add_u64(&slot.pointee.head.bytes_received, UInt64(count))
    bindCurrentSSL(slot)
    if slot.pointee.head.is_tls == 0 { parse(slot, bytes, count, fromPeer: true) }
  }

  /// `count` bytes (> 0) left through `slot`'s socket (`write`, `send`, `sendfile`, …), from `bytes`.
  @inline(__always)
  static func sent(_ slot: UnsafeMutablePointer<ConnectionSlot>, _ bytes: Bytes, _ count: Int) {
    establishIfConnecting(slot)
    cnm_add_u64(&slot.pointee.head.bytes_sent, UInt64(count))
    bindCurrentSSL(slot)
    if slot.pointee.head.is_tls == 0 { parse(slot, bytes, count, fromPeer: false) }
  }

  /// Tells the C hooks what to do with each direction's bytes (`CNM_WATCH_…`): Swift sees both
  /// while a connect is in progress; then a direction while HTTP/1.x is still read from its socket
  /// bytes, or its first bytes have not said which HTTP it is; a direction found to be HTTP/2 the
  /// hooks read themselves. Over TLS the socket bytes are only counted, and once the handshake is
  /// over the OpenSSL hooks read the plaintext in C: a direction found to be HTTP/2 by the frame
  /// reader, any other by the replay and Swift's parser (`plaintext_watch_…`, ssl_data_path.c).
  /// Called whenever that changes: the connection established, its bytes found to be TLS, its
  /// handshake over, a direction decided, a parser given up.
  static func updateWatch(_ slot: UnsafeMutablePointer<ConnectionSlot>) {
    let connecting = slot.pointee.core.phase == ConnectionCore.Phase.connecting
    let plaintext = slot.pointee.head.is_tls == 0
    let watches = { (fromPeer: Bool) -> UInt8 in
      if connecting { return UInt8(CNM_WATCH_SWIFT) }
      guard plaintext else { return UInt8(CNM_WATCH_NONE) }
      let requests = carriesRequests(slot, fromPeer: fromPeer)
      let mode = slot.pointee.h2.mode(requests: requests)
      if mode == H2Link.Mode.h2 { return UInt8(requests ? CNM_WATCH_H2_REQUESTS : CNM_WATCH_H2_RESPONSES) }
      let swiftReads = !hasGivenUp(slot, requests: requests) && mode != H2Link.Mode.stopped
        || slot.pointee.helloAfterHeader == (fromPeer ? 2 : 1)
      return UInt8(swiftReads ? CNM_WATCH_SWIFT : CNM_WATCH_NONE)
    }
    slot.pointee.head.watch_sent = watches(false)
    slot.pointee.head.watch_received = watches(true)
    let plaintextWatches = { (fromPeer: Bool) -> UInt8 in
      guard !plaintext && slot.pointee.core.tlsEnd != 0 else { return UInt8(CNM_PLAINTEXT_SWIFT_HOOK) }
      let requests = carriesRequests(slot, fromPeer: fromPeer)
      let mode = slot.pointee.h2.mode(requests: requests)
      if mode == H2Link.Mode.h2 { return UInt8(requests ? CNM_PLAINTEXT_H2_REQUESTS : CNM_PLAINTEXT_H2_RESPONSES) }
      // What `parse` passes over: a direction whose HTTP/2 stopped, or whose HTTP/1 parser gave up.
      let givenUp = mode == H2Link.Mode.http1 && hasGivenUp(slot, requests: requests)
        && !isTunnel(slot, requests: requests) && slot.pointee.helloAfterHeader == 0
      let parsed = mode != H2Link.Mode.stopped && !givenUp
      return UInt8(parsed ? CNM_PLAINTEXT_PARSE : CNM_PLAINTEXT_COUNT)
    }
    slot.pointee.head.plaintext_watch_sent = plaintextWatches(false)
    slot.pointee.head.plaintext_watch_received = plaintextWatches(true)
    // The hooks prefetch an HTTP/1.x exchange's lines while Swift parses both directions
    // (`ExchangeLines`): not once a direction is left to the hooks or is HTTP/2 (an h2c upgrade).
    let swift = UInt8(CNM_WATCH_SWIFT)
    if slot.pointee.head.watch_sent != swift || slot.pointee.head.watch_received != swift {
      cnm_set_exchanging(slot.pointee.core.fd, false)
    }
  }

  /// Bytes moving on this thread inside an SSL call belong to that SSL object: remember its socket,
  /// and from now on the socket's bytes are ciphertext.
  @inline(__always)
  static func bindCurrentSSL(_ slot: UnsafeMutablePointer<ConnectionSlot>) {
    guard let ssl = cnm_get_current_ssl(), slot.pointee.head.is_tls == 0 else { return }
    cnm_ssl_map_put(ssl, slot.pointee.core.fd, slot.pointee.core.id)
    beginTLS(slot)
    let start = cnm_get_current_ssl_start()
    _ = cnm_set_once_u64(&slot.pointee.core.tlsStart, start == UInt64(CNM_SSL_START_UNREAD) ? MonotonicClock.now() : start)
  }

  /// Where the bytes of a call are: one buffer, a vector (readv, sendmsg…), or unknown (sendfile).
  enum Bytes {
    case buffer(UnsafeRawPointer?)
    case vector(UnsafePointer<iovec>?, Int32)
    case unknown

    /// Calls `body` with each contiguous piece of the first `count` bytes.
    @inline(__always)
    func forEachPiece(upTo count: Int, _ body: (UnsafeRawBufferPointer) -> Void) {
      switch self {
      case .buffer(let pointer):
        if let pointer { body(UnsafeRawBufferPointer(start: pointer, count: count)) }
      case .vector(let vector, let vectorCount):
        guard let vector else { return }
        var left = count
        var index = 0
        while left > 0 && index < Int(vectorCount) {
          let length = min(vector[index].iov_len, left)
          if let base = vector[index].iov_base { body(UnsafeRawBufferPointer(start: base, count: length)) }
          left -= length
          index += 1
        }
      case .unknown:
        // sendfile: the content is not in memory. The parser is fed zeros (`cnm_zero_bytes`, static
        // C data: nothing allocated here), which a body in progress only counts and a head rejects.
        var left = count
        while left > 0 {
          let length = min(left, Int(cnm_zero_byte_count))
          body(UnsafeRawBufferPointer(start: cnm_zero_bytes(), count: length))
          left -= length
        }
      }
    }
  }

  /// Whether the bytes going this way are requests: what a client sends and a server receives.
  @inline(__always)
  static func carriesRequests(_ slot: UnsafeMutablePointer<ConnectionSlot>, fromPeer: Bool) -> Bool {
    (slot.pointee.core.role == ConnectionCore.Role.client) != fromPeer
  }

  /// Whether the parser of the requests (or of the responses) on `slot` gave up on its bytes.
  @inline(__always)
  static func hasGivenUp(_ slot: UnsafeMutablePointer<ConnectionSlot>, requests: Bool) -> Bool {
    requests ? slot.pointee.http.requests.hasGivenUp : slot.pointee.http.responses.hasGivenUp
  }

  /// The context an exchange that completes on `slot` is recorded with.
  static func exchangeContext(_ slot: UnsafeMutablePointer<ConnectionSlot>) -> ExchangeContext {
    ExchangeContext(
      core: slot.pointer(to: \.core)!, isTLS: slot.pointee.head.is_tls != 0,
      head: slot.pointer(to: \.head)!)
  }

  /// Plaintext bytes the peer sent (`fromPeer`) or this process sent, to the reader of their
  /// direction: HTTP/2's (``H2Traffic``) or HTTP/1.x's, as the direction's first bytes decided.
  static func parse(_ slot: UnsafeMutablePointer<ConnectionSlot>, _ bytes: Bytes, _ count: Int, fromPeer: Bool) {
    let requests = carriesRequests(slot, fromPeer: fromPeer)
    var mode = slot.pointee.h2.mode(requests: requests)
    if mode == H2Link.Mode.http1 && isTunnel(slot, requests: requests) {
      // The other direction's 101 (or CONNECT's 2xx) made this one a tunnel: HTTP/2 after h2c?
      mode = H2Link.Mode.undecided
      if requests { slot.pointee.h2.requestsMode = mode } else { slot.pointee.h2.responsesMode = mode }
    }
    if mode != H2Link.Mode.http1 && H2Traffic.take(slot, bytes, count, requests: requests, fromPeer: fromPeer) {
      return
    }
    parseHTTP1(slot, bytes, count, fromPeer: fromPeer)
  }

  /// TLS begins on `slot`: its socket bytes are ciphertext from now on. The HTTP readers start
  /// over on its plaintext when what they read so far is not its HTTP: `afresh` (they gave up on
  /// a memory BIO's ClientHello), or the connection is a tunnel (a proxy answered CONNECT with 2xx
  /// and the client's TLS runs through it to the server it named).
  static func beginTLS(_ slot: UnsafeMutablePointer<ConnectionSlot>, afresh: Bool = false) {
    if afresh || isTunnel(slot) { readPlaintextAfresh(slot) }
    slot.pointee.head.is_tls = 1
    updateWatch(slot)
  }

  /// The HTTP readers start over on what comes next (TLS plaintext, or a client's own HTTP in a
  /// proxy's CONNECT tunnel), the exchanges recorded before still counted.
  static func readPlaintextAfresh(_ slot: UnsafeMutablePointer<ConnectionSlot>) {
    slot.pointee.core.httpExchanges &+= slot.pointee.http.recorded
    slot.pointee.http = HTTPExchanges()
    if slot.pointee.h2.connection == 0 { slot.pointee.h2 = H2Link() }
  }

  /// Whether `slot` is a client's connection to a proxy that answered its CONNECT with 2xx: what
  /// follows is the client's own connection to the server it named.
  static func isClientInConnectTunnel(_ slot: UnsafeMutablePointer<ConnectionSlot>) -> Bool {
    slot.pointee.core.role == ConnectionCore.Role.client && slot.pointee.http.responses.isTunnel
      && slot.pointee.http.responses.head.answeredRequestKind == .connect
  }

  /// Whether the connection switched protocols: the parser of the direction that read the 101 or
  /// the CONNECT's 2xx has become a tunnel (the other follows once it has read the request it
  /// answered: `HTTPExchanges.requestsBeforeTunnel`).
  static func isTunnel(_ slot: UnsafeMutablePointer<ConnectionSlot>) -> Bool {
    slot.pointee.http.responses.isTunnel || slot.pointee.http.requests.isTunnel
  }

  /// Whether the HTTP/1.x parser of the request (or response) direction has become a tunnel.
  @inline(__always)
  static func isTunnel(_ slot: UnsafeMutablePointer<ConnectionSlot>, requests: Bool) -> Bool {
    requests ? slot.pointee.http.requests.isTunnel : slot.pointee.http.responses.isTunnel
  }

  /// Bytes of an HTTP/1.x direction, to its parser; nothing (not even the clock) once that parser
  /// gave up. A 101 or CONNECT's 2xx in them makes the rest of the bytes a tunnel's, which may
  /// be HTTP/2 (an h2c upgrade): they go to ``H2Traffic`` from where the tunnel begins.
  static func parseHTTP1(_ slot: UnsafeMutablePointer<ConnectionSlot>, _ bytes: Bytes, _ count: Int, fromPeer: Bool) {
    let requests = carriesRequests(slot, fromPeer: fromPeer)
    if hasGivenUp(slot, requests: requests) {
      if slot.pointee.helloAfterHeader != 0 { noteTLSOnTheWire(slot, bytes, count, fromPeer: fromPeer) }
      return
    }
    let context = exchangeContext(slot)
    let exchanges = slot.pointer(to: \.http)!
    exchanges.takeOverFromReplay(requests: requests, responses: !requests, context: context)
    let now = MonotonicClock.ofCall()
    var tunnelStart = -1  // where in this call's bytes the direction became a tunnel
    var pieceStart = 0
    bytes.forEachPiece(upTo: count) { piece in
      if requests {
        exchanges.requestBytes(piece, now: now, context: context)
      } else {
        exchanges.responseBytes(piece, now: now, context: context)
      }
      if tunnelStart < 0 && isTunnel(slot, requests: requests) {
        tunnelStart = pieceStart
          + (requests ? exchanges.pointee.requests.tunnelStart : exchanges.pointee.responses.tunnelStart)
      }
      pieceStart += piece.count
    }
    if tunnelStart >= 0 {
      if requests { slot.pointee.h2.requestsMode = H2Link.Mode.undecided } else { slot.pointee.h2.responsesMode = H2Link.Mode.undecided }
      // The tunnel's bytes: HTTP/2 after an h2c upgrade, or through a proxy's CONNECT; or, there,
      // the client's HTTP/1.x afresh (read again by the fresh parsers: the tunnel begins at the
      // call's start, since a client sends nothing into it before the proxy's answer).
      if tunnelStart < count && !H2Traffic.take(slot, bytes, count, from: tunnelStart, requests: requests, fromPeer: fromPeer)
        && tunnelStart == 0
      {
        parseHTTP1(slot, bytes, count, fromPeer: fromPeer)
      }
      return
    }
    if exchanges.pointee.replay.templateSequence != 0 { exchanges.armReplay(context: context) }
    if hasGivenUp(slot, requests: requests) {
      noteTLSOnTheWire(slot, bytes, count, fromPeer: fromPeer)
      updateWatch(slot)
    }
  }

  /// A direction's parser gave up: when on the direction's first bytes, and they are a TLS hello,
  /// the connection is TLS that no hooked library decodes (`TLSOnTheWire`). Its record then has a
  /// TLS version ("TLS" until the ServerHello names one) and, for a client that looked no name
  /// up, the server name it asked for.
  static func noteTLSOnTheWire(
    _ slot: UnsafeMutablePointer<ConnectionSlot>, _ bytes: Bytes, _ count: Int, fromPeer: Bool
  ) {
    let seen =
      fromPeer ? cnm_load_u64(&slot.pointee.head.bytes_received) : cnm_load_u64(&slot.pointee.head.bytes_sent)
    var first: UnsafeRawBufferPointer?
    bytes.forEachPiece(upTo: count) { piece in if first == nil { first = piece } }
    let direction: UInt8 = fromPeer ? 2 : 1
    let afterHeader = slot.pointee.helloAfterHeader == direction
    if afterHeader {
      slot.pointee.helloAfterHeader = 0
      updateWatch(slot)
    }
    guard let first, seen == UInt64(count) + (afterHeader ? 5 : 0) else { return }  // the direction's first bytes
    if !afterHeader && first.count == 5 && TLSOnTheWire.isHandshakeRecordHeader(first) {
      slot.pointee.helloAfterHeader = direction  // the hello comes in the next call
      return
    }
    switch TLSOnTheWire.hello(first, afterRecordHeader: afterHeader) {
    case .client(let serverName):
      if slot.pointee.core.tlsVersion.isEmpty { slot.pointee.core.tlsVersion = FixedText(text: "TLS") }
      if let serverName, slot.pointee.core.role == ConnectionCore.Role.client, slot.pointee.core.host.isEmpty {
        slot.pointee.core.host = FixedText(serverName)
      }
      TLSJoin.clientHello(on: slot, fromPeer: fromPeer)  // a memory BIO's session, if one waits
    case .server(let version):
      slot.pointee.core.tlsVersion = FixedText(text: version)
    case nil:
      break
    }
  }

  /// A non-blocking connect whose completion the host never asked about (SO_ERROR) is
  /// established by the time data moves.
  @inline(__always)
  static func establishIfConnecting(_ slot: UnsafeMutablePointer<ConnectionSlot>) {
    if slot.pointee.core.phase == ConnectionCore.Phase.connecting { established(slot) }
  }

  static func established(_ slot: UnsafeMutablePointer<ConnectionSlot>) {
    slot.pointee.core.connectEnd = MonotonicClock.ofCall()
    slot.pointee.core.phase = ConnectionCore.Phase.established
    updateWatch(slot)
  }

  static func failed(_ slot: UnsafeMutablePointer<ConnectionSlot>, call: HookedCall, code: Int32) {
    slot.pointee.core.phase = ConnectionCore.Phase.failed
    if slot.pointee.core.errorCall == 0 {
      slot.pointee.core.errorCall = call.rawValue
      slot.pointee.core.errorCode = code
    }
    if call == .connect && slot.pointee.core.connectEnd == 0 {
      slot.pointee.core.connectEnd = MonotonicClock.now()
    }
  }

  /// A non-blocking connect the host closed without asking how it ended (a happy-eyeballs client
  /// closing the attempt that lost): the socket says. Failed: its error. Connected: no error,
  /// and no connect time (when it completed is not known). Still in progress: the host gave up
  /// on it, ECANCELED. errno is left as it was.
  private static func connectUnchecked(_ fd: Int32, _ slot: UnsafeMutablePointer<ConnectionSlot>, isOpen: Bool) {
    let saved = cnm_errno()
    defer { cnm_set_errno(saved) }
    var error: Int32 = ECANCELED
    var length = socklen_t(MemoryLayout<Int32>.size)
    if isOpen, cnm_original().pointee.getsockopt!(fd, SOL_SOCKET, SO_ERROR, &error, &length) == 0, error == 0 {
      var peer = sockaddr_storage()
      var peerLength = socklen_t(MemoryLayout<sockaddr_storage>.size)
      let connected = withUnsafeMutablePointer(to: &peer) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getpeername(fd, $0, &peerLength) == 0 }
      }
      if connected {
        slot.pointee.core.phase = ConnectionCore.Phase.established
        return
      }
      error = ECANCELED
    }
    failed(slot, call: .connect, code: error == EINPROGRESS || error == EALREADY ? ECANCELED : error)
    slot.pointee.core.connectEnd = 0
  }

  /// Starts tracking a connection on `fd`: a client after connect, a server after accept.
  static func open(
    _ fd: Int32, role: UInt8, transport: UInt8, peer: PeerAddress, start: UInt64
  ) -> UnsafeMutablePointer<ConnectionSlot>? {
    if ConnectionTable.tracked(fd) != nil { closed(fd, isOpen: false) }  // closed behind our back (fclose, dup2)
    guard let slot = ConnectionTable.track(fd) else { return nil }
    slot.pointee.core.id = Recorder.nextConnectionID()
    slot.pointee.core.fd = fd
    slot.pointee.core.role = role
    slot.pointee.core.transport = transport
    slot.pointee.core.peer = peer
    slot.pointee.core.startNanoseconds = start
    slot.pointee.core.startUnixNanoseconds = MonotonicClock.unixNow() &- (MonotonicClock.now() &- start)
    slot.pointee.core.connectStart = start
    // Only a client looked its peer up; an accepted peer is the caller, whatever this process
    // resolved to the same address (a server binding "127.0.0.1" or calling "localhost").
    if role == ConnectionCore.Role.client, let resolution = Resolutions.lookUp(peer) {
      slot.pointee.core.host = resolution.host
      if let lookupNanoseconds = resolution.lookupNanoseconds {
        slot.pointee.core.dnsNanoseconds = lookupNanoseconds
        slot.pointee.core.hasDNS = 1
      }
    }
    return slot
  }

  /// The response direction ended (close, or a server's shutdown of its writing side): a
  /// close-delimited response completes here, and responses still waiting for their requests
  /// are recorded (`HTTPExchanges.finish`).
  static func finishResponses(_ slot: UnsafeMutablePointer<ConnectionSlot>) {
    slot.pointer(to: \.http)!.finish(now: MonotonicClock.now(), context: exchangeContext(slot))
  }

  /// `fd` is being closed: its connection record goes to the recorder. `isOpen`: the descriptor is
  /// still the connection's socket (not closed behind our back and reused), so it can be asked how
  /// a connect the host never checked on ended.
  static func closed(_ fd: Int32, isOpen: Bool = true) {
    guard let slot = ConnectionTable.tracked(fd) else { return }
    ConnectionTable.untrack(fd)
    // A fork child's copy of its parent's connection that it never used: the parent's to record;
    // a parent's that it handed to a child at a fork and never used itself (a prefork server's
    // accepted connection): the child's.
    if slot.pointee.head.inherited != 0 || slot.pointee.head.forked_open != 0,
      cnm_load_u64(&slot.pointee.head.bytes_sent) == 0 && cnm_load_u64(&slot.pointee.head.bytes_received) == 0
    {
      return
    }
    finishResponses(slot)
    let streams = H2Traffic.finish(slot)
    if slot.pointee.core.phase == ConnectionCore.Phase.connecting { connectUnchecked(fd, slot, isOpen: isOpen) }
    let end = MonotonicClock.now()
    slot.pointee.core.httpExchanges &+= slot.pointee.http.recorded &+ streams
    slot.pointee.core.bytesSent = cnm_load_u64(&slot.pointee.head.bytes_sent)
    slot.pointee.core.bytesReceived = cnm_load_u64(&slot.pointee.head.bytes_received)
    slot.pointee.core.isTLS = slot.pointee.head.is_tls
    let core = UnsafePointer(slot.pointer(to: \.core)!)
    RawRecord.emit { record in  // every field a connection record reads (see `RawRecord.emit`)
      record.pointee.kind = RawRecord.Kind.connection
      record.pointee.startUnixNanoseconds = core.pointee.startUnixNanoseconds
      record.pointee.durationNanoseconds = end &- core.pointee.startNanoseconds
      record.pointer(to: \.core)!.update(from: core, count: 1)
    }
  }
}
