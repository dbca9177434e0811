import CNetMonitor
import Glibc

// OpenSSL, found at run time (never linked): the handshake's time, version and server name, and
// the plaintext byte counts at SSL_read / SSL_write. Two copies of the hooks share one body: the
// GOT hooks, for a shared libssl (their originals in `cnm_originals`, the functions they ask in
// `cnm_openssl`, resolved next to the first original used), and the inline hooks, for a copy
// linked into the executable (`LinkedOpenSSL`: originals in `cnm_linked_originals`, functions in
// `cnm_openssl_linked`, resolved from that executable at attach time).
// libcurl calls SSL_connect, which reaches SSL_do_handshake through libssl's own GOT: both are
// hooked and the first call starts the clock. A program may also leave the handshake to its first
// SSL_write or SSL_read (SSL_set_connect_state, then I/O: openssl s_client, Node): the SSL call in
// which the handshake's first bytes moved starts the clock (`Traffic.bindCurrentSSL`, or
// `TLSJoin` for a memory BIO), and the handshake ends at the first call after which
// SSL_is_init_finished says so, or that moves data. A handshake that no hooked call ran leaves no
// start: its connection gets the version, and no time.

private let sslErrorWantRead: Int32 = 2
private let sslErrorWantWrite: Int32 = 3
private let tlsExtensionServerName: Int32 = 0

typealias OpenSSLFunctions = UnsafeMutablePointer<cnm_openssl_functions>

/// The tracked connection under `ssl`: the one the session map pairs it with (`cnm_ssl_map_get`:
/// a few instructions, where SSL_get_fd walks the BIO chain), else SSL_get_fd's when the object
/// uses a socket BIO (then remembered in the map), else, for a memory BIO, the one ``TLSJoin``
/// pairs it with. The shared libssl's functions are resolved next to `function` on first use.
@inline(__always)
private func connection(
  of ssl: UnsafeMutableRawPointer?, _ library: OpenSSLFunctions, resolvingNear function: UnsafeMutableRawPointer?
) -> UnsafeMutablePointer<ConnectionSlot>? {
  guard let ssl else { return nil }
  // Resolved first: the hooks ask the same functions (SSL_get_version…) of a mapped object.
  if library.pointee.SSL_get_fd == nil && !(library == cnm_ssl() && cnm_resolve_openssl(function)) { return nil }
  if let slot = TLSSession.mapped(ssl) { return TLSJoin.placed(ssl, slot) }
  if let slot = TLSSession.tracked(library.pointee.SSL_get_fd!(ssl)) { return TLSSession.remember(ssl, slot) }
  return TLSJoin.unplaced(ssl, isServer: library.pointee.SSL_is_server.map { $0(ssl) != 0 } ?? false)
}

private func handshake(
  _ ssl: UnsafeMutableRawPointer?, _ library: OpenSSLFunctions,
  original: (@convention(c) (UnsafeMutableRawPointer?) -> Int32)?
) -> Int32 {
  if TLSSession.isNested(ssl, .handshake) { return original!(ssl) }
  let function = unsafeBitCast(original, to: UnsafeMutableRawPointer?.self)
  let errorBefore = cnm_errno()
  if let slot = connection(of: ssl, library, resolvingNear: function) { TLSSession.handshakeStarting(slot) }
  cnm_set_errno(errorBefore)
  let result = TLSSession.inside(ssl, .handshake) { original!(ssl) }
  let error = cnm_errno()
  guard let slot = connection(of: ssl, library, resolvingNear: function) else {
    cnm_set_errno(error)
    return result
  }
  if result == 1 {
    handshakeCompleted(slot, ssl, library)
  } else if let getError = library.pointee.SSL_get_error {
    let reason = getError(ssl, result)
    if reason != sslErrorWantRead && reason != sslErrorWantWrite {
      TLSSession.handshakeFailed(slot, call: .sslHandshake, code: reason)
    }
  }
  cnm_set_errno(error)
  return result
}

/// The handshake on `slot` is over, if it was not already: its end, version, ALPN protocol and
/// server name.
private func handshakeCompleted(
  _ slot: UnsafeMutablePointer<ConnectionSlot>, _ ssl: UnsafeMutableRawPointer?, _ library: OpenSSLFunctions
) {
  guard TLSSession.handshakePending(slot) else { return }
  TLSSession.handshakeCompleted(
    slot, version: FixedText<16>(cString: library.pointee.SSL_get_version?(ssl)),
    alpn: negotiatedProtocol(ssl, library))
  if slot.pointee.core.host.isEmpty {
    slot.pointee.core.host = FixedText<128>(cString: library.pointee.SSL_get_servername?(ssl, tlsExtensionServerName))
  }
}

/// The protocol ALPN chose (not NUL-terminated in OpenSSL); empty when none was.
private func negotiatedProtocol(_ ssl: UnsafeMutableRawPointer?, _ library: OpenSSLFunctions) -> FixedText<16> {
  guard let selected = library.pointee.SSL_get0_alpn_selected else { return FixedText() }
  var data: UnsafePointer<UInt8>?
  var length: UInt32 = 0
  selected(ssl, &data, &length)
  guard let data, length > 0 else { return FixedText() }
  return FixedText(UnsafeRawBufferPointer(start: data, count: Int(length)))
}

/// An SSL_read or SSL_write (or their `_ex` forms) that `call` makes: `moved` plaintext bytes in
/// `buffer` when it succeeded (`moved` > 0). One that moved nothing may still have ended a
/// handshake run implicitly.
@inline(__always)
private func transfer(
  _ ssl: UnsafeMutableRawPointer?, _ buffer: UnsafeRawPointer?, fromPeer: Bool, _ library: OpenSSLFunctions,
  near function: UnsafeMutableRawPointer?, _ call: () -> (result: Int32, moved: Int)
) -> Int32 {
  let kind = TLSSession.Call.transfer(fromPeer: fromPeer)
  if TLSSession.isNested(ssl, kind) { return call().result }
  let (result, moved) = TLSSession.inside(ssl, kind) { call() }
  let error = cnm_errno()
  if let slot = connection(of: ssl, library, resolvingNear: function) {
    if moved > 0 {
      if TLSSession.handshakePending(slot) { handshakeCompleted(slot, ssl, library) }
      TLSSession.plaintext(slot, buffer, moved, fromPeer: fromPeer)
    } else if TLSSession.handshakePending(slot), library.pointee.SSL_is_init_finished?(ssl) == 1 {
      handshakeCompleted(slot, ssl, library)
    }
  }
  cnm_set_errno(error)
  return result
}

private typealias Handshake = @convention(c) (UnsafeMutableRawPointer?) -> Int32
private typealias Read = @convention(c) (UnsafeMutableRawPointer?, UnsafeMutableRawPointer?, Int32) -> Int32
private typealias ReadEx =
  @convention(c) (UnsafeMutableRawPointer?, UnsafeMutableRawPointer?, Int, UnsafeMutablePointer<Int>?) -> Int32
private typealias Write = @convention(c) (UnsafeMutableRawPointer?, UnsafeRawPointer?, Int32) -> Int32
private typealias WriteEx =
  @convention(c) (UnsafeMutableRawPointer?, UnsafeRawPointer?, Int, UnsafeMutablePointer<Int>?) -> Int32

@inline(__always)
private func read(_ ssl: UnsafeMutableRawPointer?, _ buffer: UnsafeMutableRawPointer?, _ count: Int32,
                  _ library: OpenSSLFunctions, _ original: Read?) -> Int32 {
  transfer(ssl, buffer, fromPeer: true, library, near: unsafeBitCast(original, to: UnsafeMutableRawPointer?.self)) {
    let result = original!(ssl, buffer, count)
    return (result, Int(max(result, 0)))
  }
}

@inline(__always)
private func readEx(_ ssl: UnsafeMutableRawPointer?, _ buffer: UnsafeMutableRawPointer?, _ count: Int,
                    _ read: UnsafeMutablePointer<Int>?, _ library: OpenSSLFunctions, _ original: ReadEx?) -> Int32 {
  transfer(ssl, buffer, fromPeer: true, library, near: unsafeBitCast(original, to: UnsafeMutableRawPointer?.self)) {
    let result = original!(ssl, buffer, count, read)
    return (result, result == 1 ? read?.pointee ?? 0 : 0)
  }
}

@inline(__always)
private func write(_ ssl: UnsafeMutableRawPointer?, _ buffer: UnsafeRawPointer?, _ count: Int32,
                   _ library: OpenSSLFunctions, _ original: Write?) -> Int32 {
  transfer(ssl, buffer, fromPeer: false, library, near: unsafeBitCast(original, to: UnsafeMutableRawPointer?.self)) {
    let result = original!(ssl, buffer, count)
    return (result, Int(max(result, 0)))
  }
}

@inline(__always)
private func writeEx(_ ssl: UnsafeMutableRawPointer?, _ buffer: UnsafeRawPointer?, _ count: Int,
                     _ written: UnsafeMutablePointer<Int>?, _ library: OpenSSLFunctions, _ original: WriteEx?) -> Int32 {
  transfer(ssl, buffer, fromPeer: false, library, near: unsafeBitCast(original, to: UnsafeMutableRawPointer?.self)) {
    let result = original!(ssl, buffer, count, written)
    return (result, result == 1 ? written?.pointee ?? 0 : 0)
  }
}

// The GOT hooks: a shared libssl.

let sslDoHandshakeHook: @convention(c) (UnsafeMutableRawPointer?) -> Int32 = { ssl in
  handshake(ssl, cnm_ssl(), original: cnm_original().pointee.SSL_do_handshake)
}

let sslConnectHook: @convention(c) (UnsafeMutableRawPointer?) -> Int32 = { ssl in
  handshake(ssl, cnm_ssl(), original: cnm_original().pointee.SSL_connect)
}

let sslAcceptHook: @convention(c) (UnsafeMutableRawPointer?) -> Int32 = { ssl in
  handshake(ssl, cnm_ssl(), original: cnm_original().pointee.SSL_accept)
}

// SSL_read, SSL_write and their _ex forms are C's hooks (`cnm_ssl_data_hooks`: ssl_data_path.c),
// which read a session's plaintext themselves once its handshake is over; these are their slow
// paths, for every other call.
nonisolated(unsafe) private var sslDataSlowPaths = cnm_ssl_data_calls(
  SSL_read: { ssl, buffer, count in read(ssl, buffer, count, cnm_ssl(), cnm_original().pointee.SSL_read) },
  SSL_read_ex: { ssl, buffer, count, read in
    readEx(ssl, buffer, count, read, cnm_ssl(), cnm_original().pointee.SSL_read_ex)
  },
  SSL_write: { ssl, buffer, count in write(ssl, buffer, count, cnm_ssl(), cnm_original().pointee.SSL_write) },
  SSL_write_ex: { ssl, buffer, count, written in
    writeEx(ssl, buffer, count, written, cnm_ssl(), cnm_original().pointee.SSL_write_ex)
  })

nonisolated(unsafe) private var linkedSSLDataSlowPaths = cnm_ssl_data_calls(
  SSL_read: { ssl, buffer, count in read(ssl, buffer, count, cnm_ssl_linked(), cnm_linked_original().pointee.SSL_read) },
  SSL_read_ex: { ssl, buffer, count, read in
    readEx(ssl, buffer, count, read, cnm_ssl_linked(), cnm_linked_original().pointee.SSL_read_ex)
  },
  SSL_write: { ssl, buffer, count in
    write(ssl, buffer, count, cnm_ssl_linked(), cnm_linked_original().pointee.SSL_write)
  },
  SSL_write_ex: { ssl, buffer, count, written in
    writeEx(ssl, buffer, count, written, cnm_ssl_linked(), cnm_linked_original().pointee.SSL_write_ex)
  })

/// The plaintext C's hooks leave to Swift: HTTP/1.x (or not yet decided) that the replay did not take.
private let plaintextCallback: cnm_plaintext_callback = { slot, received, buffer, count in
  guard let slot else { return }
  Traffic.parse(slot.assumingMemoryBound(to: ConnectionSlot.self), .buffer(buffer), count, fromPeer: received)
}

enum OpenSSLDataPath {
  /// Tells C's hooks where a connection keeps its id and TLS counts, and what their slow paths are.
  static func setUp() {
    precondition(
      MemoryLayout<ConnectionSlot>.offset(of: \.core.tlsBytesReceived)
        == MemoryLayout<ConnectionSlot>.offset(of: \.core.tlsBytesSent)! + 8,
      "the TLS counts are two words, sent then received")
    cnm_set_ssl_data_path(
      MemoryLayout<ConnectionSlot>.offset(of: \.core.id)!, MemoryLayout<ConnectionSlot>.offset(of: \.core.tlsBytesSent)!,
      &sslDataSlowPaths, &linkedSSLDataSlowPaths, plaintextCallback)
  }

  /// C's hooks of SSL_read, SSL_read_ex, SSL_write and SSL_write_ex, in that order: the shared
  /// libssl's, or the linked copy's.
  static func hooks(linked: Bool) -> [UnsafeRawPointer] {
    let calls = cnm_ssl_data_hooks(linked).pointee
    return [
      unsafeBitCast(calls.SSL_read!, to: UnsafeRawPointer.self),
      unsafeBitCast(calls.SSL_read_ex!, to: UnsafeRawPointer.self),
      unsafeBitCast(calls.SSL_write!, to: UnsafeRawPointer.self),
      unsafeBitCast(calls.SSL_write_ex!, to: UnsafeRawPointer.self),
    ]
  }
}

// The inline hooks: OpenSSL linked into the executable (`LinkedOpenSSL`), in the order of
// `cnm_linked_openssl_originals`.

nonisolated(unsafe) let linkedSSLHooks: [UnsafeRawPointer] = [
  unsafeBitCast(
    { ssl in handshake(ssl, cnm_ssl_linked(), original: cnm_linked_original().pointee.SSL_do_handshake) } as Handshake,
    to: UnsafeRawPointer.self),
  unsafeBitCast(
    { ssl in handshake(ssl, cnm_ssl_linked(), original: cnm_linked_original().pointee.SSL_connect) } as Handshake,
    to: UnsafeRawPointer.self),
  unsafeBitCast(
    { ssl in handshake(ssl, cnm_ssl_linked(), original: cnm_linked_original().pointee.SSL_accept) } as Handshake,
    to: UnsafeRawPointer.self),
]
  + OpenSSLDataPath.hooks(linked: true)
