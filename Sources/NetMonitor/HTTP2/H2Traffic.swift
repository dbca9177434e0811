import CHTTP2
import CNetMonitor

/// Which bytes are HTTP/2, and their way to the frame readers. Each direction of a connection is
/// decided by its first bytes, in whatever pieces they come: the request direction is HTTP/2 when
/// it begins with the client preface (`PRI * HTTP/2.0…`: prior knowledge, or TLS with ALPN h2), the
/// response direction when it begins with a SETTINGS frame (the server's preface). Anything else is
/// HTTP/1.x, decided at its first byte (`G`, `P`, `H`…) but for a request beginning `PRI` or a
/// response beginning with a zero byte, held until they say (at most 3 and 8 bytes). An HTTP/1.1
/// tunnel (`Upgrade: h2c` answered by 101) decides again where the tunnel begins.
enum H2Traffic {
  /// ``ConnectionCore/httpStop`` when no HTTP/2 state was left in the pool (`CNM_H2_POOL_CAPACITY`
  /// connections at once, or the pool could not be mapped); other values are the `ch2_status` that
  /// stopped a direction.
  static let poolExhausted: UInt8 = 255
  /// Takes a direction's bytes when they are not HTTP/1.x's: HTTP/2 (read), bytes held while the
  /// direction is undecided, a tunnel or HTTP/2 that stopped (not read). False: HTTP/1.x's, for
  /// the caller to parse (the bytes held before, if any, were parsed first). Never inlined into
  /// its callers (the socket and TLS paths): one copy, which a stream's calls keep in the cache.
  @inline(never)
  static func take(
    _ slot: UnsafeMutablePointer<ConnectionSlot>, _ bytes: Traffic.Bytes, _ count: Int, from offset: Int = 0,
    requests: Bool, fromPeer: Bool
  ) -> Bool {
    let link = slot.pointer(to: \.h2)!
    var mode = link.pointee.mode(requests: requests)
    var held: UInt64 = 0  // the bytes held before this call, and how many
    var heldCount = 0
    if mode == H2Link.Mode.undecided {
      mode = decideNow(slot, bytes, count, from: offset, requests: requests, fromPeer: fromPeer, held: &held,
                       heldCount: &heldCount)
      if mode == H2Link.Mode.undecided { return true }
    }
    guard mode == H2Link.Mode.h2 else { return mode != H2Link.Mode.http1 }
    let connection = UnsafeMutablePointer<H2Connection>(bitPattern: UInt(cnm_load_u64(link.pointer(to: \.connection)!)))!
    let now = MonotonicClock.ofCall()
    let context = UnsafeMutableRawPointer(slot)
    var status = CH2_OK
    if heldCount > 0 { status = readHeld(connection, held, heldCount, requests: requests, now: now, context: context) }
    if status == CH2_OK, case .vector(let vector?, let vectorCount) = bytes {
      // A vector's pieces in one C call (nginx writes each frame's header and payload from two).
      status = ch2_connection_read_vector(connection, requests ? 1 : 0, vector, vectorCount, offset, count, now, context)
    } else {
      var skip = offset
      bytes.forEachPiece(upTo: count) { piece in
        guard status == CH2_OK else { return }
        if skip >= piece.count {
          skip -= piece.count
          return
        }
        status = read(connection, UnsafeRawBufferPointer(rebasing: piece[skip...]), requests: requests, now: now,
                      context: context)
        skip = 0
      }
    }
    if status != CH2_OK { stop(slot, code: UInt8(truncatingIfNeeded: status.rawValue), requests: requests) }
    return true
  }

  /// The part of ``take(_:_:_:from:requests:fromPeer:)`` for a direction not decided yet: decides
  /// it from the bytes held before (`held`, `heldCount`: set to them) and this call's; holds them
  /// all when they do not say yet (returns undecided); parses the held ones as HTTP/1.x when they
  /// are (returns http1); takes the connection's HTTP/2 state when they are HTTP/2. Out of line:
  /// a direction decides once, and the path every later call takes stays small.
  @inline(never)
  private static func decideNow(
    _ slot: UnsafeMutablePointer<ConnectionSlot>, _ bytes: Traffic.Bytes, _ count: Int, from offset: Int,
    requests: Bool, fromPeer: Bool, held: inout UInt64, heldCount: inout Int
  ) -> UInt8 {
    let link = slot.pointer(to: \.h2)!
    held = requests ? link.pointee.requestsHeld : link.pointee.responsesHeld
    heldCount = Int(requests ? link.pointee.requestsHeldCount : link.pointee.responsesHeldCount)
    var seen = held
    var seenCount = heldCount
    var mode = decide(slot, seen: &seen, seenCount: &seenCount, bytes, count, from: offset, requests: requests)
    if mode == H2Link.Mode.tunnel && requests && Traffic.isClientInConnectTunnel(slot) {
      // The client's own HTTP/1.x to the server it asked its proxy for: read from its start.
      Traffic.readPlaintextAfresh(slot)
      mode = H2Link.Mode.http1
    }
    if mode == H2Link.Mode.undecided {  // all of them held: fewer than 9
      if requests {
        link.pointee.requestsHeld = seen
        link.pointee.requestsHeldCount = UInt8(seenCount)
      } else {
        link.pointee.responsesHeld = seen
        link.pointee.responsesHeldCount = UInt8(seenCount)
      }
      return mode
    }
    if requests {
      link.pointee.requestsMode = mode
      link.pointee.requestsHeldCount = 0
    } else {
      link.pointee.responsesMode = mode
      link.pointee.responsesHeldCount = 0
    }
    if mode == H2Link.Mode.http1 {
      if heldCount > 0 {
        withUnsafeBytes(of: &held) { bytes in
          Traffic.parseHTTP1(slot, .buffer(bytes.baseAddress), heldCount, fromPeer: fromPeer)
        }
      }
      return mode
    }
    if mode == H2Link.Mode.h2 {
      if begin(slot, requests: requests) {
        Traffic.updateWatch(slot)  // the hooks read the direction's next bytes themselves
      } else {
        mode = H2Link.Mode.stopped
        stop(slot, code: H2Traffic.poolExhausted, requests: requests)
      }
    }
    return mode
  }

  /// Reads the bytes held while the direction was undecided (`count` of `held`'s, in order).
  @inline(never)
  private static func readHeld(
    _ connection: UnsafeMutablePointer<H2Connection>, _ held: UInt64, _ count: Int, requests: Bool, now: UInt64,
    context: UnsafeMutableRawPointer
  ) -> ch2_status {
    var bytes = held
    return withUnsafeBytes(of: &bytes) { buffer in
      read(connection, UnsafeRawBufferPointer(rebasing: buffer[..<count]), requests: requests, now: now, context: context)
    }
  }

  /// Reads a piece of a direction's bytes (streams.c: frame by frame, each stream that ends
  /// recorded through ``H2Streams``'s callbacks, with the connection's slot as their context).
  /// Returns what stopped it, or CH2_OK.
  @inline(__always)
  private static func read(
    _ connection: UnsafeMutablePointer<H2Connection>, _ piece: UnsafeRawBufferPointer, requests: Bool, now: UInt64,
    context: UnsafeMutableRawPointer
  ) -> ch2_status {
    guard let base = piece.baseAddress?.assumingMemoryBound(to: UInt8.self) else { return CH2_OK }
    return ch2_connection_read(connection, requests ? 1 : 0, base, piece.count, now, context)
  }

  /// What a direction's first bytes say (those seen before, `seen`, then this call's from
  /// `offset`): HTTP/2, HTTP/1.x (or a tunnel's other protocol), or not yet. `seen` and
  /// `seenCount` get the first 8 bytes and how many there are (up to 9: the ninth is checked here).
  private static func decide(
    _ slot: UnsafeMutablePointer<ConnectionSlot>, seen: inout UInt64, seenCount: inout Int, _ bytes: Traffic.Bytes,
    _ count: Int, from offset: Int, requests: Bool
  ) -> UInt8 {
    var skip = offset
    var ninth: UInt8 = 0
    var word = seen
    var total = seenCount
    bytes.forEachPiece(upTo: count) { piece in
      for byte in piece {
        if total > 8 { return }
        if skip > 0 {
          skip -= 1
          continue
        }
        if total < 8 { word |= UInt64(byte) << (8 * UInt64(total)) } else { ninth = byte }
        total += 1
      }
    }
    seen = word
    seenCount = total
    let notHTTP2 = Traffic.isTunnel(slot, requests: requests) ? H2Link.Mode.tunnel : H2Link.Mode.http1
    if requests {
      // "PRI " decides; a byte that differs from it, HTTP/1.x.
      let compared = UInt64(Swift.min(total, 4))
      let mask: UInt64 = (1 << (8 * compared)) &- 1
      guard word & mask == 0x2049_5250 & mask else { return notHTTP2 }
      return total >= 4 ? H2Link.Mode.h2 : H2Link.Mode.undecided
    }
    // A response never begins with a zero byte; a SETTINGS frame on stream 0 (its length below
    // 2^16) does: length, type 4, no flags, stream 0.
    guard total > 0, word & 0xFF == 0 else { return total == 0 ? H2Link.Mode.undecided : notHTTP2 }
    guard total >= 9 else { return H2Link.Mode.undecided }
    let length = (word >> 8 & 0xFF) << 8 | word >> 16 & 0xFF
    let isSettings = word >> 24 & 0xFF == UInt64(CH2_SETTINGS) && word >> 32 == 0 && ninth == 0 && length % 6 == 0
    return isSettings ? H2Link.Mode.h2 : notHTTP2
  }

  /// The direction speaks HTTP/2: the connection's state, taken from the pool by whichever
  /// direction comes first. After an h2c upgrade (a 101), the request that asked for it is stream
  /// 1's; through a proxy's CONNECT tunnel (its 2xx) stream 1 is the client's own. False when the
  /// pool has no entry left.
  private static func begin(_ slot: UnsafeMutablePointer<ConnectionSlot>, requests: Bool) -> Bool {
    let link = slot.pointer(to: \.h2)!.pointer(to: \.connection)!
    var current = cnm_load_u64(link)
    if current == 0 {
      guard let taken = UnsafeMutablePointer<H2Connection>.take() else { return false }
      let address = UInt64(UInt(bitPattern: taken))
      if !cnm_exchange_u64(link, &current, address) {
        taken.giveBack()  // the other direction took one first
      } else {
        current = address
      }
    }
    if requests && Traffic.isTunnel(slot, requests: true) && slot.pointee.http.responses.head.status == 101 {
      let connection = UnsafeMutablePointer<H2Connection>(bitPattern: UInt(current))!
      slot.pointer(to: \.http)!.upgraded(to: connection, context: Traffic.exchangeContext(slot))
    }
    return true
  }

  /// What the hooks call when a direction they read stops (h2_reading.c): a ``ch2_status``.
  static let stoppedCallback: cnm_h2_stopped_callback = { slot, requests, status in
    guard let slot else { return }
    stop(slot.assumingMemoryBound(to: ConnectionSlot.self), code: UInt8(truncatingIfNeeded: status),
         requests: requests)
  }

  /// A direction's HTTP/2 stopped being read: its streams are recorded at the close, without
  /// what the direction would have said, and the connection's record says why.
  @inline(never)
  private static func stop(_ slot: UnsafeMutablePointer<ConnectionSlot>, code: UInt8, requests: Bool) {
    if requests { slot.pointee.h2.requestsMode = H2Link.Mode.stopped } else { slot.pointee.h2.responsesMode = H2Link.Mode.stopped }
    if slot.pointee.core.httpStop == 0 { slot.pointee.core.httpStop = code }
    Traffic.updateWatch(slot)
  }

  /// The connection closed: its open streams are recorded, and its state goes back to the pool.
  /// Returns its streams: recorded, or lost past the streams it could follow in flight.
  static func finish(_ slot: UnsafeMutablePointer<ConnectionSlot>) -> UInt64 {
    let link = slot.pointer(to: \.h2)!.pointer(to: \.connection)!
    let address = cnm_load_u64(link)
    guard address != 0, let connection = UnsafeMutablePointer<H2Connection>(bitPattern: UInt(address)) else { return 0 }
    ch2_connection_finish(connection, MonotonicClock.now(), UnsafeMutableRawPointer(slot))
    let streams = ch2_connection_streams(connection)
    cnm_store_u64(link, 0)
    connection.giveBack()
    return streams
  }
}
