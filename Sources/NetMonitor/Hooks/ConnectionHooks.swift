import CNetMonitor
import Glibc

// Where connections begin and end: connect (client), accept (server), getsockopt(SO_ERROR) (a
// non-blocking connect completing), close. None of them is on the data path.

/// The socket type of `fd` (SOCK_STREAM, SOCK_DGRAM), or nil. errno is left as it was.
private func socketType(_ fd: Int32) -> Int32? {
  var type: Int32 = 0
  var length = socklen_t(MemoryLayout<Int32>.size)
  let saved = cnm_errno()
  defer { cnm_set_errno(saved) }
  guard cnm_original().pointee.getsockopt!(fd, SOL_SOCKET, SO_TYPE, &type, &length) == 0 else { return nil }
  return type
}

private func transport(of fd: Int32) -> UInt8? {
  switch socketType(fd) {
  case Int32(SOCK_STREAM.rawValue): ConnectionCore.Transport.tcp
  case Int32(SOCK_DGRAM.rawValue): ConnectionCore.Transport.udp
  default: nil
  }
}

let connectHook: @convention(c) (Int32, UnsafePointer<sockaddr>?, socklen_t) -> Int32 = { fd, address, length in
  let peer = PeerAddress(address, length: length)
  guard peer.isInternet, !cnm_guard_active(), let transport = transport(of: fd) else {
    return cnm_original().pointee.connect!(fd, address, length)
  }
  let start = MonotonicClock.now()
  let result = cnm_original().pointee.connect!(fd, address, length)
  let error = cnm_errno()
  if let slot = Traffic.open(fd, role: ConnectionCore.Role.client, transport: transport, peer: peer, start: start) {
    if result == 0 {
      Traffic.established(slot)
    } else if error == EINPROGRESS || error == EAGAIN {
      slot.pointee.core.phase = ConnectionCore.Phase.connecting
    } else {
      Traffic.failed(slot, call: .connect, code: error)
    }
  }
  cnm_set_errno(error)
  return result
}

/// A new server-side connection accepted on a listening socket.
private func accepted(_ fd: Int32, _ address: UnsafeMutablePointer<sockaddr>?, _ length: UnsafeMutablePointer<socklen_t>?) {
  guard fd >= 0, !cnm_guard_active() else { return }
  let saved = cnm_errno()
  defer { cnm_set_errno(saved) }
  var peer = PeerAddress(address, length: length?.pointee ?? 0)
  if peer.family == 0 {
    var storage = sockaddr_storage()
    var storageLength = socklen_t(MemoryLayout<sockaddr_storage>.size)
    withUnsafeMutablePointer(to: &storage) { pointer in
      pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address in
        if getpeername(fd, address, &storageLength) == 0 { peer = PeerAddress(address, length: storageLength) }
      }
    }
  }
  guard peer.isInternet else { return }
  let now = MonotonicClock.now()
  if let slot = Traffic.open(fd, role: ConnectionCore.Role.server, transport: ConnectionCore.Transport.tcp, peer: peer, start: now) {
    slot.pointee.core.connectEnd = now
    slot.pointee.core.phase = ConnectionCore.Phase.established
  }
}

let acceptHook: @convention(c) (Int32, UnsafeMutablePointer<sockaddr>?, UnsafeMutablePointer<socklen_t>?) -> Int32 = {
  fd, address, length in
  let result = cnm_original().pointee.accept!(fd, address, length)
  if result >= 0 { accepted(result, address, length) }
  return result
}

let accept4Hook:
  @convention(c) (Int32, UnsafeMutablePointer<sockaddr>?, UnsafeMutablePointer<socklen_t>?, Int32) -> Int32 = {
    fd, address, length, flags in
    let result = cnm_original().pointee.accept4!(fd, address, length, flags)
    if result >= 0 { accepted(result, address, length) }
    return result
  }

let getsockoptHook:
  @convention(c) (Int32, Int32, Int32, UnsafeMutableRawPointer?, UnsafeMutablePointer<socklen_t>?) -> Int32 = {
    fd, level, option, value, length in
    let result = cnm_original().pointee.getsockopt!(fd, level, option, value, length)
    if level == SOL_SOCKET, option == SO_ERROR, result == 0, let storage = value,
      let slot = ConnectionTable.tracked(fd), slot.pointee.core.phase == ConnectionCore.Phase.connecting
    {
      let error = storage.load(as: Int32.self)
      if error == 0 {
        Traffic.established(slot)
      } else if error != EINPROGRESS && error != EALREADY {
        Traffic.failed(slot, call: .connect, code: error)
      }
    }
    return result
  }

/// A server that shuts down its writing side ends a close-delimited response there.
let shutdownHook: @convention(c) (Int32, Int32) -> Int32 = { fd, how in
  let result = cnm_original().pointee.shutdown!(fd, how)
  if result == 0, how != Int32(SHUT_RD), let slot = ConnectionTable.tracked(fd),
    slot.pointee.core.role == ConnectionCore.Role.server
  {
    let error = cnm_errno()
    Traffic.finishResponses(slot)
    cnm_set_errno(error)
  }
  return result
}
