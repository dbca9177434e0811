import CNetMonitor
import Glibc

// OpenSSL, found at run time (never linked): the handshake's time, version and server name, and
// the plaintext byte counts at SSL_read / SSL_write. libcurl calls SSL_connect, which reaches
// SSL_do_handshake through libssl's own GOT: both are hooked and the first call starts the clock.
// A program may also leave the handshake to its first SSL_write or SSL_read (SSL_set_connect_state,
// then I/O: openssl s_client does): the SSL call in which the handshake's first bytes moved starts
// the clock (`Traffic.bindCurrentSSL`), and the first of them to move data ends it, as the data
// comes only after the handshake. A handshake that no hooked call ran leaves no start: its
// connection gets the version, and no time.

private let sslErrorWantRead: Int32 = 2
private let sslErrorWantWrite: Int32 = 3
private let tlsExtensionServerName: Int32 = 0

/// The tracked connection under `ssl`: SSL_get_fd (resolved next to `function`) when the object
/// uses a socket BIO, else the socket an earlier call on it was seen using (`cnm_ssl_map_get`).
@inline(__always)
private func connection(of ssl: UnsafeMutableRawPointer?, resolvingNear function: UnsafeMutableRawPointer?)
  -> UnsafeMutablePointer<ConnectionSlot>?
{
  guard let ssl else { return nil }
  if cnm_ssl().pointee.SSL_get_fd == nil && !cnm_resolve_openssl(function) { return nil }
  var fd = cnm_ssl().pointee.SSL_get_fd!(ssl)
  if fd < 0 { fd = cnm_ssl_map_get(ssl) }
  return ConnectionTable.tracked(fd)
}

/// Runs an SSL call with the thread marked as inside it, so the socket I/O it does binds `ssl` to
/// its socket (``Traffic/bindCurrentSSL(_:)``). Nested calls (SSL_connect → SSL_do_handshake)
/// keep the outermost start time.
@inline(__always)
private func insideSSLCall<T>(_ ssl: UnsafeMutableRawPointer?, _ body: () -> T) -> T {
  let previous = cnm_get_current_ssl()
  let previousStart = cnm_get_current_ssl_start()
  cnm_set_current_ssl(ssl, previous == ssl && previousStart != 0 ? previousStart : MonotonicClock.now())
  defer { cnm_set_current_ssl(previous, previousStart) }
  return body()
}

private func handshake(
  _ ssl: UnsafeMutableRawPointer?, original: (@convention(c) (UnsafeMutableRawPointer?) -> Int32)?
) -> Int32 {
  let function = unsafeBitCast(original, to: UnsafeMutableRawPointer?.self)
  let errorBefore = cnm_errno()
  if let slot = connection(of: ssl, resolvingNear: function) {
    slot.pointee.head.is_tls = 1
    Traffic.updateWatch(slot)
    _ = cnm_set_once_u64(&slot.pointee.core.tlsStart, MonotonicClock.now())
  }
  cnm_set_errno(errorBefore)
  let result = insideSSLCall(ssl) { original!(ssl) }
  let error = cnm_errno()
  guard let slot = connection(of: ssl, resolvingNear: function) else {
    cnm_set_errno(error)
    return result
  }
  if result == 1 {
    handshakeCompleted(slot, ssl)
  } else if let getError = cnm_ssl().pointee.SSL_get_error {
    let reason = getError(ssl, result)
    if reason != sslErrorWantRead && reason != sslErrorWantWrite {
      slot.pointee.core.tlsEnd = MonotonicClock.now()
      Traffic.failed(slot, call: .sslHandshake, code: reason)
    }
  }
  cnm_set_errno(error)
  return result
}

/// The handshake on `slot` is over, if it was not already: its end, version, ALPN protocol and
/// server name.
private func handshakeCompleted(_ slot: UnsafeMutablePointer<ConnectionSlot>, _ ssl: UnsafeMutableRawPointer?) {
  guard slot.pointee.core.tlsEnd == 0 else { return }
  slot.pointee.core.tlsEnd = MonotonicClock.now()
  slot.pointee.core.tlsVersion = FixedText<16>(cString: cnm_ssl().pointee.SSL_get_version?(ssl))
  slot.pointee.core.tlsALPN = negotiatedProtocol(ssl)
  if slot.pointee.core.host.isEmpty {
    slot.pointee.core.host = FixedText<128>(cString: cnm_ssl().pointee.SSL_get_servername?(ssl, tlsExtensionServerName))
  }
}

/// The protocol ALPN chose (not NUL-terminated in OpenSSL); empty when none was.
private func negotiatedProtocol(_ ssl: UnsafeMutableRawPointer?) -> FixedText<16> {
  guard let selected = cnm_ssl().pointee.SSL_get0_alpn_selected else { return FixedText() }
  var data: UnsafePointer<UInt8>?
  var length: UInt32 = 0
  selected(ssl, &data, &length)
  guard let data, length > 0 else { return FixedText() }
  return FixedText(UnsafeRawBufferPointer(start: data, count: Int(length)))
}

let sslDoHandshakeHook: @convention(c) (UnsafeMutableRawPointer?) -> Int32 = { ssl in
  handshake(ssl, original: cnm_original().pointee.SSL_do_handshake)
}

let sslConnectHook: @convention(c) (UnsafeMutableRawPointer?) -> Int32 = { ssl in
  handshake(ssl, original: cnm_original().pointee.SSL_connect)
}

let sslAcceptHook: @convention(c) (UnsafeMutableRawPointer?) -> Int32 = { ssl in
  handshake(ssl, original: cnm_original().pointee.SSL_accept)
}

let sslReadHook: @convention(c) (UnsafeMutableRawPointer?, UnsafeMutableRawPointer?, Int32) -> Int32 = {
  ssl, buffer, count in
  let result = insideSSLCall(ssl) { cnm_original().pointee.SSL_read!(ssl, buffer, count) }
  if result > 0 {
    let error = cnm_errno()
    let function = unsafeBitCast(cnm_original().pointee.SSL_read, to: UnsafeMutableRawPointer?.self)
    if let slot = connection(of: ssl, resolvingNear: function) {
      if slot.pointee.core.tlsEnd == 0 { handshakeCompleted(slot, ssl) }
      cnm_add_u64(&slot.pointee.core.tlsBytesReceived, UInt64(result))
      Traffic.parse(slot, .buffer(buffer), Int(result), fromPeer: true)
    }
    cnm_set_errno(error)
  }
  return result
}

let sslReadExHook:
  @convention(c) (UnsafeMutableRawPointer?, UnsafeMutableRawPointer?, Int, UnsafeMutablePointer<Int>?) -> Int32 = {
    ssl, buffer, count, read in
    let result = insideSSLCall(ssl) { cnm_original().pointee.SSL_read_ex!(ssl, buffer, count, read) }
    if result == 1, let read {
      let error = cnm_errno()
      let function = unsafeBitCast(cnm_original().pointee.SSL_read_ex, to: UnsafeMutableRawPointer?.self)
      if let slot = connection(of: ssl, resolvingNear: function) {
        if slot.pointee.core.tlsEnd == 0 { handshakeCompleted(slot, ssl) }
        cnm_add_u64(&slot.pointee.core.tlsBytesReceived, UInt64(read.pointee))
        Traffic.parse(slot, .buffer(buffer), read.pointee, fromPeer: true)
      }
      cnm_set_errno(error)
    }
    return result
  }

let sslWriteHook: @convention(c) (UnsafeMutableRawPointer?, UnsafeRawPointer?, Int32) -> Int32 = {
  ssl, buffer, count in
  let result = insideSSLCall(ssl) { cnm_original().pointee.SSL_write!(ssl, buffer, count) }
  if result > 0 {
    let error = cnm_errno()
    let function = unsafeBitCast(cnm_original().pointee.SSL_write, to: UnsafeMutableRawPointer?.self)
    if let slot = connection(of: ssl, resolvingNear: function) {
      if slot.pointee.core.tlsEnd == 0 { handshakeCompleted(slot, ssl) }
      cnm_add_u64(&slot.pointee.core.tlsBytesSent, UInt64(result))
      Traffic.parse(slot, .buffer(buffer), Int(result), fromPeer: false)
    }
    cnm_set_errno(error)
  }
  return result
}

let sslWriteExHook:
  @convention(c) (UnsafeMutableRawPointer?, UnsafeRawPointer?, Int, UnsafeMutablePointer<Int>?) -> Int32 = {
    ssl, buffer, count, written in
    let result = insideSSLCall(ssl) { cnm_original().pointee.SSL_write_ex!(ssl, buffer, count, written) }
    if result == 1, let written {
      let error = cnm_errno()
      let function = unsafeBitCast(cnm_original().pointee.SSL_write_ex, to: UnsafeMutableRawPointer?.self)
      if let slot = connection(of: ssl, resolvingNear: function) {
        if slot.pointee.core.tlsEnd == 0 { handshakeCompleted(slot, ssl) }
        cnm_add_u64(&slot.pointee.core.tlsBytesSent, UInt64(written.pointee))
        Traffic.parse(slot, .buffer(buffer), written.pointee, fromPeer: false)
      }
      cnm_set_errno(error)
    }
    return result
  }
