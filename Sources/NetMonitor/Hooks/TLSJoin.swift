import CNetMonitor

/// Joins a TLS session whose ciphertext moves outside its library calls (a memory BIO: Node's TLS,
/// python's asyncio) to its socket, by the thread that moves the ciphertext. Node writes a client's
/// ClientHello into memory during SSL_read and sends it on the socket right after, on the same
/// thread; a server reads the ClientHello from the socket, then calls SSL_read. So each thread
/// remembers the last session its calls could not place (`cnm_unjoined_ssl`) and the last accepted
/// connection whose first bytes were a ClientHello (`cnm_hello_fd`); the second of the pair joins
/// them. What cannot be joined: a session whose ciphertext another thread moves, or whose first
/// call comes after a second connection's hello on the thread; its connection keeps what
/// ``TLSOnTheWire`` reads (version, server name) and no plaintext.
enum TLSJoin {
  /// A call on `session` found no connection under it. A server's session joins the connection
  /// whose ClientHello this thread just read, if any (returned); a client's is remembered for the
  /// ClientHello its thread sends next.
  static func unplaced(_ session: UnsafeMutableRawPointer, isServer: Bool) -> UnsafeMutablePointer<ConnectionSlot>? {
    if isServer {
      var id: UInt64 = 0
      let fd = cnm_get_hello_fd(&id)
      guard let slot = TLSSession.tracked(fd, id: id), slot.pointee.head.is_tls == 0 else { return nil }
      cnm_set_hello_fd(-1, 0)
      join(slot, session, start: MonotonicClock.now())
      return slot
    }
    if cnm_get_unjoined_ssl() != session { cnm_set_unjoined_ssl(session, MonotonicClock.now()) }
    return nil
  }

  /// `session` was found on `slot`: if its thread still waited for its ClientHello (its socket was
  /// found inside a call since: libcurl's BIO), it waits no more, so that it cannot join another
  /// connection once its own is gone. Returns `slot`.
  @inline(__always)
  static func placed(
    _ session: UnsafeMutableRawPointer, _ slot: UnsafeMutablePointer<ConnectionSlot>
  ) -> UnsafeMutablePointer<ConnectionSlot> {
    if cnm_get_unjoined_ssl() == session { cnm_set_unjoined_ssl(nil, 0) }
    return slot
  }

  /// The first bytes of a direction of `slot` are a ClientHello, seen outside any hooked call: a
  /// client sending it joins the session its thread could not place; a server reading it waits for
  /// the session call that follows (``unplaced(_:isServer:)``).
  static func clientHello(on slot: UnsafeMutablePointer<ConnectionSlot>, fromPeer: Bool) {
    guard cnm_get_current_ssl() == nil, slot.pointee.head.is_tls == 0 else { return }
    let isClient = slot.pointee.core.role == ConnectionCore.Role.client
    if fromPeer && !isClient {
      cnm_set_hello_fd(slot.pointee.core.fd, slot.pointee.core.id)
    } else if !fromPeer && isClient, let session = cnm_get_unjoined_ssl(), TLSSession.mapped(session) == nil {
      let start = cnm_get_unjoined_ssl_start()
      cnm_set_unjoined_ssl(nil, 0)
      join(slot, session, start: start)
    }
  }

  /// `session` runs over `slot` from now on: its socket bytes are ciphertext, and the TLS clock
  /// started at `start`. The HTTP readers, which gave up on the hello's bytes, start over on the
  /// plaintext.
  private static func join(_ slot: UnsafeMutablePointer<ConnectionSlot>, _ session: UnsafeMutableRawPointer, start: UInt64) {
    cnm_ssl_map_put(session, slot.pointee.core.fd, slot.pointee.core.id)
    slot.pointee.helloAfterHeader = 0
    Traffic.beginTLS(slot, afresh: true)
    _ = cnm_set_once_u64(&slot.pointee.core.tlsStart, start)
  }
}
