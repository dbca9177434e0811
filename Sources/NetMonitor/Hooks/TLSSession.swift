import CNetMonitor
import Glibc

/// What every TLS library's hooks share: one account of TLS per connection, whichever library
/// (OpenSSL through libssl's slots or inline in an executable, GnuTLS). A library's hooks find the
/// connection under their session object, then report the handshake's start and end and the
/// plaintext through here. Nothing here allocates, locks or does I/O.
enum TLSSession {
  /// The tracked connection `fd` when it is the one the session map paired with `id`, or, for a
  /// descriptor the library itself names (`id` nil: SSL_get_fd, gnutls_transport_get_int), any
  /// tracked connection.
  @inline(__always)
  static func tracked(_ fd: Int32, id: UInt64? = nil) -> UnsafeMutablePointer<ConnectionSlot>? {
    guard fd >= 0, let slot = ConnectionTable.tracked(fd) else { return nil }
    if let id, slot.pointee.core.id != id { return nil }  // a stale pair: another connection now
    return slot
  }

  /// The connection an earlier call on `session` was seen using (``Traffic/bindCurrentSSL(_:)``,
  /// ``TLSJoin``), when it is still that connection.
  @inline(__always)
  static func mapped(_ session: UnsafeMutableRawPointer) -> UnsafeMutablePointer<ConnectionSlot>? {
    var id: UInt64 = 0
    let fd = cnm_ssl_map_get(session, &id)
    return tracked(fd, id: id)
  }

  /// Pairs `session` with `slot` in the session map, for the calls that follow; returns `slot`.
  @inline(__always)
  static func remember(
    _ session: UnsafeMutableRawPointer, _ slot: UnsafeMutablePointer<ConnectionSlot>
  ) -> UnsafeMutablePointer<ConnectionSlot> {
    cnm_ssl_map_put(session, slot.pointee.core.fd, slot.pointee.core.id)
    return slot
  }

  /// The kind of a hooked library call (`CNM_SSL_CALL_…`, cnm_tls.h).
  enum Call: UInt8, CaseIterable {
    case handshake = 0, read = 1, write = 2

    static func transfer(fromPeer: Bool) -> Call { fromPeer ? .read : .write }
  }

  /// Whether the thread is already inside a hooked call of kind `call` on `session`: a library
  /// calling its own hooked function (SSL_connect → SSL_do_handshake; gnutls_record_send →
  /// gnutls_record_send2 through libgnutls's own slots; a GOT hook over an inline one). The inner
  /// hook then only calls through: the outer one counts. A call of another kind inside it (Node
  /// writes a request from a callback of the SSL_read that ends its handshake) is read.
  @inline(__always)
  static func isNested(_ session: UnsafeMutableRawPointer?, _ call: Call) -> Bool {
    cnm_get_current_ssl() == session && cnm_get_current_ssl_start() != 0 && cnm_get_current_ssl_call() == call.rawValue
  }

  /// Runs a library call of kind `call` on `session` with the thread marked as inside it, so the
  /// socket I/O it does binds `session` to its socket (``Traffic/bindCurrentSSL(_:)``). Nested
  /// calls keep the outermost start time.
  @inline(__always)
  static func inside<T>(_ session: UnsafeMutableRawPointer?, _ call: Call, _ body: () -> T) -> T {
    let previous = cnm_get_current_ssl()
    let previousStart = cnm_get_current_ssl_start()
    let previousCall = cnm_get_current_ssl_call()
    cnm_set_current_ssl(
      session, previous == session && previousStart != 0 ? previousStart : MonotonicClock.now(), call.rawValue)
    defer { cnm_set_current_ssl(previous, previousStart, previousCall) }
    return body()
  }

  /// A handshake call begins on `slot`: its bytes are ciphertext from now on, and the first such
  /// call starts the clock.
  @inline(__always)
  static func handshakeStarting(_ slot: UnsafeMutablePointer<ConnectionSlot>) {
    if slot.pointee.head.is_tls == 0 { Traffic.beginTLS(slot) }
    _ = cnm_set_once_u64(&slot.pointee.core.tlsStart, MonotonicClock.now())
  }

  /// Whether the handshake on `slot` still has to be reported as over.
  @inline(__always)
  static func handshakePending(_ slot: UnsafeMutablePointer<ConnectionSlot>) -> Bool {
    slot.pointee.core.tlsEnd == 0
  }

  /// The handshake on `slot` is over: its end, version and ALPN protocol (empty when unknown).
  static func handshakeCompleted(
    _ slot: UnsafeMutablePointer<ConnectionSlot>, version: FixedText<16>, alpn: FixedText<16>
  ) {
    guard slot.pointee.core.tlsEnd == 0 else { return }
    slot.pointee.core.tlsEnd = MonotonicClock.now()
    slot.pointee.core.tlsVersion = version
    slot.pointee.core.tlsALPN = alpn
    Traffic.updateWatch(slot)  // the OpenSSL hooks read the plaintext in C from now on
  }

  /// The handshake on `slot` failed for good: the library's error code, for `call`.
  static func handshakeFailed(_ slot: UnsafeMutablePointer<ConnectionSlot>, call: HookedCall, code: Int32) {
    slot.pointee.core.tlsEnd = MonotonicClock.now()
    Traffic.failed(slot, call: call, code: code)
  }

  /// `count` plaintext bytes (> 0) in `buffer` that the process received (`fromPeer`) or sent on
  /// `slot` through its TLS library: counted, and read as HTTP as OpenSSL's C hooks read it
  /// (`cnm_tls_plaintext`): by the frame reader in C when the direction is HTTP/2, by the hooks'
  /// replay while they are part of a simple exchange (``ExchangeReplay``), else by
  /// ``Traffic/parse(_:_:_:fromPeer:)`` unless its parser gave up.
  @inline(__always)
  static func plaintext(
    _ slot: UnsafeMutablePointer<ConnectionSlot>, _ buffer: UnsafeRawPointer?, _ count: Int, fromPeer: Bool
  ) {
    cnm_tls_plaintext(slot.pointer(to: \.head)!, fromPeer, buffer, count)
  }
}
