import CNetMonitor
import Glibc

// GnuTLS (wget, GnuTLS builds of libcurl), found at run time (never linked), through the GOT slots
// of the images that import it: the handshake's time, version and ALPN protocol, and the
// plaintext at gnutls_record_send / _recv. The session's socket is the one the session map pairs
// it with, else the descriptor its transport was given (gnutls_transport_get_int: wget's
// gnutls_transport_set_ptr of the descriptor), else the socket its default transport was seen
// using inside a call (libgnutls calls recv and send through its own slots: `Traffic.bindCurrentSSL`). GnuTLS runs the handshake only in
// gnutls_handshake. libgnutls calls gnutls_record_send2 and gnutls_handshake through its own
// slots too: the inner hook only calls through (`TLSSession.isNested`).

/// GNUTLS_E_AGAIN and GNUTLS_E_INTERRUPTED: a non-blocking handshake to call again.
private let gnutlsAgain: Int32 = -28
private let gnutlsInterrupted: Int32 = -52

/// The tracked connection under `session`.
@inline(__always)
private func connection(of session: UnsafeMutableRawPointer?, resolvingNear function: UnsafeMutableRawPointer?)
  -> UnsafeMutablePointer<ConnectionSlot>?
{
  guard let session else { return nil }
  // Resolved first: the hooks ask the same library (its version…) of a mapped session.
  let library = cnm_gnutls_library()!
  if library.pointee.transport_get_int == nil && !cnm_resolve_gnutls(function) { return nil }
  if let slot = TLSSession.mapped(session) { return slot }
  guard let slot = TLSSession.tracked(library.pointee.transport_get_int!(session)) else { return nil }
  return TLSSession.remember(session, slot)
}

/// The version GnuTLS negotiated, named as OpenSSL names it (`gnutls_protocol_t`'s stable values),
/// so a connection's `tls_version` reads the same whichever library made it.
private func version(_ session: UnsafeMutableRawPointer?) -> FixedText<16> {
  guard let get = cnm_gnutls_library().pointee.protocol_get_version else { return FixedText() }
  let protocolNumber = get(session)
  switch protocolNumber {
  case 1: return FixedText(text: "SSLv3")
  case 2: return FixedText(text: "TLSv1")
  case 3: return FixedText(text: "TLSv1.1")
  case 4: return FixedText(text: "TLSv1.2")
  case 5: return FixedText(text: "TLSv1.3")
  case 201: return FixedText(text: "DTLSv1")
  case 202: return FixedText(text: "DTLSv1.2")
  default: return FixedText(cString: cnm_gnutls_library().pointee.protocol_get_name?(protocolNumber))
  }
}

/// The protocol ALPN chose; empty when none was.
private func negotiatedProtocol(_ session: UnsafeMutableRawPointer?) -> FixedText<16> {
  guard let selected = cnm_gnutls_library().pointee.alpn_get_selected_protocol else { return FixedText() }
  var datum = cnm_gnutls_datum()
  guard selected(session, &datum) == 0, let data = datum.data, datum.size > 0 else { return FixedText() }
  return FixedText(UnsafeRawBufferPointer(start: data, count: Int(datum.size)))
}

let gnutlsHandshakeHook: @convention(c) (UnsafeMutableRawPointer?) -> Int32 = { session in
  let original = cnm_original().pointee.gnutls_handshake
  if TLSSession.isNested(session, .handshake) { return original!(session) }
  let function = unsafeBitCast(original, to: UnsafeMutableRawPointer?.self)
  let errorBefore = cnm_errno()
  if let slot = connection(of: session, resolvingNear: function) { TLSSession.handshakeStarting(slot) }
  cnm_set_errno(errorBefore)
  let result = TLSSession.inside(session, .handshake) { original!(session) }
  let error = cnm_errno()
  if let slot = connection(of: session, resolvingNear: function) {
    if result == 0 {
      TLSSession.handshakeCompleted(slot, version: version(session), alpn: negotiatedProtocol(session))
    } else if result != gnutlsAgain && result != gnutlsInterrupted
      && cnm_gnutls_library().pointee.error_is_fatal?(result) != 0
    {
      TLSSession.handshakeFailed(slot, call: .gnutlsHandshake, code: result)
    }
  }
  cnm_set_errno(error)
  return result
}

/// A record call on `session` that `call` makes, which moved its result's bytes (when > 0) of
/// plaintext in `buffer`.
@inline(__always)
private func record(
  _ session: UnsafeMutableRawPointer?, _ buffer: UnsafeRawPointer?, fromPeer: Bool,
  near function: UnsafeMutableRawPointer?, _ call: () -> Int
) -> Int {
  let kind = TLSSession.Call.transfer(fromPeer: fromPeer)
  if TLSSession.isNested(session, kind) { return call() }
  let result = TLSSession.inside(session, kind) { call() }
  if result > 0 {
    let error = cnm_errno()
    if let slot = connection(of: session, resolvingNear: function) {
      if TLSSession.handshakePending(slot) {
        TLSSession.handshakeCompleted(slot, version: version(session), alpn: negotiatedProtocol(session))
      }
      TLSSession.plaintext(slot, buffer, result, fromPeer: fromPeer)
    }
    cnm_set_errno(error)
  }
  return result
}

let gnutlsRecordSendHook: @convention(c) (UnsafeMutableRawPointer?, UnsafeRawPointer?, Int) -> Int = {
  session, buffer, count in
  let original = cnm_original().pointee.gnutls_record_send
  return record(session, buffer, fromPeer: false, near: unsafeBitCast(original, to: UnsafeMutableRawPointer?.self)) {
    original!(session, buffer, count)
  }
}

let gnutlsRecordSend2Hook: @convention(c) (UnsafeMutableRawPointer?, UnsafeRawPointer?, Int, Int, UInt32) -> Int = {
  session, buffer, count, padding, flags in
  let original = cnm_original().pointee.gnutls_record_send2
  return record(session, buffer, fromPeer: false, near: unsafeBitCast(original, to: UnsafeMutableRawPointer?.self)) {
    original!(session, buffer, count, padding, flags)
  }
}

let gnutlsRecordRecvHook: @convention(c) (UnsafeMutableRawPointer?, UnsafeMutableRawPointer?, Int) -> Int = {
  session, buffer, count in
  let original = cnm_original().pointee.gnutls_record_recv
  return record(session, buffer, fromPeer: true, near: unsafeBitCast(original, to: UnsafeMutableRawPointer?.self)) {
    original!(session, buffer, count)
  }
}

let gnutlsRecordRecvSeqHook:
  @convention(c) (UnsafeMutableRawPointer?, UnsafeMutableRawPointer?, Int, UnsafeMutablePointer<UInt8>?) -> Int = {
    session, buffer, count, sequence in
    let original = cnm_original().pointee.gnutls_record_recv_seq
    return record(session, buffer, fromPeer: true, near: unsafeBitCast(original, to: UnsafeMutableRawPointer?.self)) {
      original!(session, buffer, count, sequence)
    }
  }
