import CNetMonitor
import Glibc

// The data path: every read and write of the process passes here. For a descriptor that is not a
// tracked connection the hook adds a bounds check, one byte load and a branch to the call; the
// original is always called through the pointer the engine saved, and errno is the original's.

let readHook: @convention(c) (Int32, UnsafeMutableRawPointer?, Int) -> Int = { fd, buffer, count in
  let result = cnm_original().pointee.read!(fd, buffer, count)
  if let slot = ConnectionTable.tracked(fd) { Traffic.received(slot, result) }
  return result
}

let readvHook: @convention(c) (Int32, UnsafePointer<iovec>?, Int32) -> Int = { fd, vector, count in
  let result = cnm_original().pointee.readv!(fd, vector, count)
  if let slot = ConnectionTable.tracked(fd) { Traffic.received(slot, result) }
  return result
}

let recvHook: @convention(c) (Int32, UnsafeMutableRawPointer?, Int, Int32) -> Int = { fd, buffer, count, flags in
  let result = cnm_original().pointee.recv!(fd, buffer, count, flags)
  if let slot = ConnectionTable.tracked(fd), flags & Int32(MSG_PEEK) == 0 { Traffic.received(slot, result) }
  return result
}

let recvfromHook:
  @convention(c) (
    Int32, UnsafeMutableRawPointer?, Int, Int32, UnsafeMutablePointer<sockaddr>?, UnsafeMutablePointer<socklen_t>?
  ) -> Int = { fd, buffer, count, flags, address, length in
    let result = cnm_original().pointee.recvfrom!(fd, buffer, count, flags, address, length)
    if let slot = ConnectionTable.tracked(fd), flags & Int32(MSG_PEEK) == 0 { Traffic.received(slot, result) }
    return result
  }

let recvmsgHook: @convention(c) (Int32, UnsafeMutablePointer<msghdr>?, Int32) -> Int = { fd, message, flags in
  let result = cnm_original().pointee.recvmsg!(fd, message, flags)
  if let slot = ConnectionTable.tracked(fd), flags & Int32(MSG_PEEK) == 0 { Traffic.received(slot, result) }
  return result
}

let writeHook: @convention(c) (Int32, UnsafeRawPointer?, Int) -> Int = { fd, buffer, count in
  let result = cnm_original().pointee.write!(fd, buffer, count)
  if let slot = ConnectionTable.tracked(fd) { Traffic.sent(slot, result) }
  return result
}

let writevHook: @convention(c) (Int32, UnsafePointer<iovec>?, Int32) -> Int = { fd, vector, count in
  let result = cnm_original().pointee.writev!(fd, vector, count)
  if let slot = ConnectionTable.tracked(fd) { Traffic.sent(slot, result) }
  return result
}

let sendHook: @convention(c) (Int32, UnsafeRawPointer?, Int, Int32) -> Int = { fd, buffer, count, flags in
  let result = cnm_original().pointee.send!(fd, buffer, count, flags)
  if let slot = ConnectionTable.tracked(fd) { Traffic.sent(slot, result) }
  return result
}

let sendtoHook:
  @convention(c) (Int32, UnsafeRawPointer?, Int, Int32, UnsafePointer<sockaddr>?, socklen_t) -> Int = {
    fd, buffer, count, flags, address, length in
    let result = cnm_original().pointee.sendto!(fd, buffer, count, flags, address, length)
    if let slot = ConnectionTable.tracked(fd) { Traffic.sent(slot, result) }
    return result
  }

let sendmsgHook: @convention(c) (Int32, UnsafePointer<msghdr>?, Int32) -> Int = { fd, message, flags in
  let result = cnm_original().pointee.sendmsg!(fd, message, flags)
  if let slot = ConnectionTable.tracked(fd) { Traffic.sent(slot, result) }
  return result
}

let sendfileHook: @convention(c) (Int32, Int32, UnsafeMutablePointer<off_t>?, Int) -> Int = {
  output, input, offset, count in
  let result = cnm_original().pointee.sendfile!(output, input, offset, count)
  if let slot = ConnectionTable.tracked(output) { Traffic.sent(slot, result) }
  return result
}
