import CNetMonitor
import Glibc

// NSS (libcurl's NSS flavour; Firefox's and Thunderbird's TLS), found at run time (never linked),
// through the GOT slots of the images that import it: SSL_ForceHandshake(WithTimeout) is the
// handshake; the plaintext goes through NSPR's generic PR_Read/PR_Write/PR_Recv/PR_Send on the SSL
// layer's PRFileDesc. Those also read files and plain sockets, so they count only a descriptor the
// session map pairs with a connection, and only a handshake call pairs one: the socket the thread
// moves bytes on during it (NSPR calls send and recv through libnspr4's slots:
// `Traffic.bindCurrentSSL`). Not seen: a handshake left to the first read or write (no
// SSL_ForceHandshake call), whose connection keeps what `TLSOnTheWire` reads.

/// PR_MSG_PEEK: bytes looked at, not taken.
private let peek: Int32 = 2
/// PR_WOULD_BLOCK_ERROR: a non-blocking handshake to call again.
private let wouldBlock: Int32 = -5998

/// The handshake of `descriptor` (an SSL-layer PRFileDesc) that `call` runs.
private func handshake(_ descriptor: UnsafeMutableRawPointer?, function: UnsafeMutableRawPointer?, _ call: () -> Int32)
  -> Int32
{
  if TLSSession.isNested(descriptor, .handshake) { return call() }
  let errorBefore = cnm_errno()
  let library = cnm_nss_library()!
  let resolved = library.pointee.SSL_GetChannelInfo != nil || cnm_resolve_nss(function)
  if let descriptor, let slot = TLSSession.mapped(descriptor) { TLSSession.handshakeStarting(slot) }
  cnm_set_errno(errorBefore)
  let result = TLSSession.inside(descriptor, .handshake) { call() }
  let error = cnm_errno()
  if resolved, let descriptor, let slot = TLSSession.mapped(descriptor) {
    if result == 0 {
      completed(slot, descriptor)
    } else if let code = library.pointee.PR_GetError?(), code != wouldBlock {
      TLSSession.handshakeFailed(slot, call: .nssHandshake, code: code)
    }
  }
  cnm_set_errno(error)
  return result
}

/// The handshake on `slot` is over: its version (SSL_GetChannelInfo) and ALPN protocol.
private func completed(_ slot: UnsafeMutablePointer<ConnectionSlot>, _ descriptor: UnsafeMutableRawPointer) {
  guard TLSSession.handshakePending(slot) else { return }
  let library = cnm_nss_library()!
  var info = cnm_nss_channel_info()
  var version = FixedText<16>()
  // The first fields only: NSS refuses a length past the structure it knows.
  if library.pointee.SSL_GetChannelInfo?(descriptor, &info, UInt32(MemoryLayout<cnm_nss_channel_info>.size)) == 0,
    info.length >= 6
  {
    switch info.protocol_version {
    case 0x0304: version = FixedText(text: "TLSv1.3")
    case 0x0303: version = FixedText(text: "TLSv1.2")
    case 0x0302: version = FixedText(text: "TLSv1.1")
    case 0x0301: version = FixedText(text: "TLSv1")
    default: break
    }
  }
  var alpn = FixedText<16>()
  var state: Int32 = 0
  var protocolName = (UInt64(0), UInt64(0), UInt64(0), UInt64(0))  // 32 bytes
  var length: UInt32 = 0
  withUnsafeMutableBytes(of: &protocolName) { buffer in
    let bytes = buffer.baseAddress!.assumingMemoryBound(to: UInt8.self)
    // SSL_NEXT_PROTO_NEGOTIATED (1) or SSL_NEXT_PROTO_SELECTED (2): ALPN chose one.
    if library.pointee.SSL_GetNextProto?(descriptor, &state, bytes, &length, UInt32(buffer.count)) == 0,
      state == 1 || state == 2, length > 0, length <= UInt32(buffer.count)
    {
      alpn = FixedText(UnsafeRawBufferPointer(start: bytes, count: Int(length)))
    }
  }
  TLSSession.handshakeCompleted(slot, version: version, alpn: alpn)
}

/// A read or write that `call` makes on `descriptor`: its result's bytes (when > 0) of plaintext
/// in `buffer`, when the descriptor is a TLS session the map knows.
@inline(__always)
private func transfer(
  _ descriptor: UnsafeMutableRawPointer?, _ buffer: UnsafeRawPointer?, fromPeer: Bool, _ call: () -> Int32
) -> Int32 {
  let kind = TLSSession.Call.transfer(fromPeer: fromPeer)
  guard let descriptor, !TLSSession.isNested(descriptor, kind), TLSSession.mapped(descriptor) != nil else { return call() }
  let result = TLSSession.inside(descriptor, kind) { call() }
  if result > 0 {
    let error = cnm_errno()
    if let slot = TLSSession.mapped(descriptor) {
      if TLSSession.handshakePending(slot) { completed(slot, descriptor) }
      TLSSession.plaintext(slot, buffer, Int(result), fromPeer: fromPeer)
    }
    cnm_set_errno(error)
  }
  return result
}

let nssForceHandshakeHook: @convention(c) (UnsafeMutableRawPointer?) -> Int32 = { descriptor in
  let original = cnm_original().pointee.SSL_ForceHandshake
  return handshake(descriptor, function: unsafeBitCast(original, to: UnsafeMutableRawPointer?.self)) {
    original!(descriptor)
  }
}

let nssForceHandshakeWithTimeoutHook: @convention(c) (UnsafeMutableRawPointer?, UInt32) -> Int32 = {
  descriptor, timeout in
  let original = cnm_original().pointee.SSL_ForceHandshakeWithTimeout
  return handshake(descriptor, function: unsafeBitCast(original, to: UnsafeMutableRawPointer?.self)) {
    original!(descriptor, timeout)
  }
}

let prReadHook: @convention(c) (UnsafeMutableRawPointer?, UnsafeMutableRawPointer?, Int32) -> Int32 = {
  descriptor, buffer, count in
  transfer(descriptor, buffer, fromPeer: true) { cnm_original().pointee.PR_Read!(descriptor, buffer, count) }
}

let prWriteHook: @convention(c) (UnsafeMutableRawPointer?, UnsafeRawPointer?, Int32) -> Int32 = {
  descriptor, buffer, count in
  transfer(descriptor, buffer, fromPeer: false) { cnm_original().pointee.PR_Write!(descriptor, buffer, count) }
}

let prRecvHook: @convention(c) (UnsafeMutableRawPointer?, UnsafeMutableRawPointer?, Int32, Int32, UInt32) -> Int32 = {
  descriptor, buffer, count, flags, timeout in
  let original = cnm_original().pointee.PR_Recv
  if flags & peek != 0 { return original!(descriptor, buffer, count, flags, timeout) }
  return transfer(descriptor, buffer, fromPeer: true) { original!(descriptor, buffer, count, flags, timeout) }
}

let prSendHook: @convention(c) (UnsafeMutableRawPointer?, UnsafeRawPointer?, Int32, Int32, UInt32) -> Int32 = {
  descriptor, buffer, count, flags, timeout in
  transfer(descriptor, buffer, fromPeer: false) {
    cnm_original().pointee.PR_Send!(descriptor, buffer, count, flags, timeout)
  }
}
