import CNetMonitor
import Glibc
import Testing

@testable import NetMonitor

/// A connected TCP pair inside this process (client by connect, server by accept): both ends are
/// tracked connections, so every hook takes its slow path on them.
private struct SocketPair {
  let client: Int32
  let server: Int32

  init() throws {
    let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    defer { _ = Glibc.close(listener) }
    var address = Sockets.address(0)
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    _ = withUnsafeMutablePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        bind(listener, $0, length) == 0 && listen(listener, 4) == 0 ? getsockname(listener, $0, &length) : -1
      }
    }
    client = try Sockets.connect(UInt16(bigEndian: address.sin_port))
    server = accept(listener, nil, nil)
  }

  func close() {
    _ = Glibc.close(client)
    _ = Glibc.close(server)
  }
}

private func writeVector(_ fd: Int32, hooked: Bool) -> Int {
  var byte: UInt8 = 1
  return withUnsafeMutablePointer(to: &byte) { pointer in
    var vector = iovec(iov_base: pointer, iov_len: 1)
    return hooked ? writev(fd, &vector, 1) : cnm_original().pointee.writev!(fd, &vector, 1)
  }
}

private func readVector(_ fd: Int32, hooked: Bool) -> Int {
  var bytes = [UInt8](repeating: 0, count: 8)
  return bytes.withUnsafeMutableBytes { buffer in
    var vector = iovec(iov_base: buffer.baseAddress, iov_len: 8)
    return hooked ? readv(fd, &vector, 1) : cnm_original().pointee.readv!(fd, &vector, 1)
  }
}

private func sendMessage(_ fd: Int32, hooked: Bool) -> Int {
  var byte: UInt8 = 1
  return withUnsafeMutablePointer(to: &byte) { pointer in
    var vector = iovec(iov_base: pointer, iov_len: 1)
    return withUnsafeMutablePointer(to: &vector) { vectorPointer in
      var message = msghdr()
      message.msg_iov = vectorPointer
      message.msg_iovlen = 1
      return hooked ? sendmsg(fd, &message, 0) : cnm_original().pointee.sendmsg!(fd, &message, 0)
    }
  }
}

private func receiveMessage(_ fd: Int32, hooked: Bool) -> Int {
  var bytes = [UInt8](repeating: 0, count: 8)
  return bytes.withUnsafeMutableBytes { buffer in
    var vector = iovec(iov_base: buffer.baseAddress, iov_len: 8)
    return withUnsafeMutablePointer(to: &vector) { vectorPointer in
      var message = msghdr()
      message.msg_iov = vectorPointer
      message.msg_iovlen = 1
      return hooked ? recvmsg(fd, &message, 0) : cnm_original().pointee.recvmsg!(fd, &message, 0)
    }
  }
}

private func sendFile(_ fd: Int32, hooked: Bool) -> Int {
  let input = open("/dev/null", O_RDONLY)
  defer { close(input) }
  return hooked ? sendfile(fd, input, nil, 16) : cnm_original().pointee.sendfile!(fd, input, nil, 16)
}

private func lookUp(hooked: Bool) -> Int {
  var answers: UnsafeMutablePointer<addrinfo>?
  var hints = addrinfo()
  hints.ai_flags = AI_NUMERICHOST
  let status = hooked ? getaddrinfo("not an address", nil, &hints, &answers)
    : cnm_original().pointee.getaddrinfo!("not an address", nil, &hints, &answers)
  if status == 0 { freeaddrinfo(answers) }
  return Int(status)
}

/// One call made twice: through the hooked symbol, and through the original the engine saved.
struct ErrnoCase: CustomStringConvertible, Sendable {
  let description: String
  let hooked: @Sendable (Int32, Int32) -> Int
  let original: @Sendable (Int32, Int32) -> Int
}

private let sentinel: Int32 = 4242

/// Every hook leaves errno exactly as its original does, on success (where the original leaves it
/// alone) and on failure.
@Suite("errno through the hooks", .serialized)
struct ErrnoTests {
  static let cases: [ErrnoCase] = {
    var buffer = [UInt8](repeating: 0, count: 64)
    let one: [UInt8] = [1]
    return [
      ErrnoCase(description: "write", hooked: { fd, _ in write(fd, one, 1) }, original: { fd, _ in cnm_original().pointee.write!(fd, one, 1) }),
      ErrnoCase(description: "send", hooked: { fd, _ in send(fd, one, 1, 0) }, original: { fd, _ in cnm_original().pointee.send!(fd, one, 1, 0) }),
      ErrnoCase(description: "sendto", hooked: { fd, _ in sendto(fd, one, 1, 0, nil, 0) }, original: { fd, _ in cnm_original().pointee.sendto!(fd, one, 1, 0, nil, 0) }),
      ErrnoCase(description: "read (nothing to read: EAGAIN)", hooked: { _, peer in
        var b = [UInt8](repeating: 0, count: 8); return read(peer, &b, 8) }, original: { _, peer in
        var b = [UInt8](repeating: 0, count: 8); return cnm_original().pointee.read!(peer, &b, 8) }),
      ErrnoCase(description: "recv (nothing to read: EAGAIN)", hooked: { _, peer in
        var b = [UInt8](repeating: 0, count: 8); return recv(peer, &b, 8, 0) }, original: { _, peer in
        var b = [UInt8](repeating: 0, count: 8); return cnm_original().pointee.recv!(peer, &b, 8, 0) }),
      ErrnoCase(description: "read of a closed descriptor (EBADF)", hooked: { _, _ in
        var b = [UInt8](repeating: 0, count: 8); return read(-1, &b, 8) }, original: { _, _ in
        var b = [UInt8](repeating: 0, count: 8); return cnm_original().pointee.read!(-1, &b, 8) }),
      ErrnoCase(description: "getsockopt SO_ERROR", hooked: { fd, _ in
        var value: Int32 = 0; var length = socklen_t(4); return Int(getsockopt(fd, SOL_SOCKET, SO_ERROR, &value, &length)) },
        original: { fd, _ in var value: Int32 = 0; var length = socklen_t(4)
          return Int(cnm_original().pointee.getsockopt!(fd, SOL_SOCKET, SO_ERROR, &value, &length)) }),
      ErrnoCase(description: "close(-1) (EBADF)", hooked: { _, _ in Int(close(-1)) }, original: { _, _ in Int(cnm_original().pointee.close!(-1)) }),
      ErrnoCase(description: "shutdown(-1) (EBADF)", hooked: { _, _ in Int(shutdown(-1, Int32(SHUT_WR))) }, original: { _, _ in Int(cnm_original().pointee.shutdown!(-1, Int32(SHUT_WR))) }),
      ErrnoCase(description: "writev", hooked: { fd, _ in writeVector(fd, hooked: true) }, original: { fd, _ in writeVector(fd, hooked: false) }),
      ErrnoCase(description: "sendmsg", hooked: { fd, _ in sendMessage(fd, hooked: true) }, original: { fd, _ in sendMessage(fd, hooked: false) }),
      ErrnoCase(description: "readv (EAGAIN)", hooked: { _, peer in readVector(peer, hooked: true) }, original: { _, peer in readVector(peer, hooked: false) }),
      ErrnoCase(description: "recvfrom (EAGAIN)", hooked: { _, peer in
        var b = [UInt8](repeating: 0, count: 8); return recvfrom(peer, &b, 8, 0, nil, nil) }, original: { _, peer in
        var b = [UInt8](repeating: 0, count: 8); return cnm_original().pointee.recvfrom!(peer, &b, 8, 0, nil, nil) }),
      ErrnoCase(description: "recvmsg (EAGAIN)", hooked: { _, peer in receiveMessage(peer, hooked: true) }, original: { _, peer in receiveMessage(peer, hooked: false) }),
      ErrnoCase(description: "sendfile from /dev/null (nothing to send)", hooked: { fd, _ in sendFile(fd, hooked: true) }, original: { fd, _ in sendFile(fd, hooked: false) }),
      ErrnoCase(description: "accept on a non-listening socket (EINVAL)", hooked: { fd, _ in Int(accept(fd, nil, nil)) }, original: { fd, _ in Int(cnm_original().pointee.accept!(fd, nil, nil)) }),
      ErrnoCase(description: "getaddrinfo of an invalid name", hooked: { _, _ in lookUp(hooked: true) }, original: { _, _ in lookUp(hooked: false) }),
    ].map { $0 } + [readAfterWrite(buffer: &buffer)]
  }()

  /// A successful read: the peer first writes one byte.
  private static func readAfterWrite(buffer: inout [UInt8]) -> ErrnoCase {
    ErrnoCase(
      description: "read (one byte waiting)",
      hooked: { fd, peer in
        _ = cnm_original().pointee.write!(fd, [7], 1)
        var b = [UInt8](repeating: 0, count: 8)
        return read(peer, &b, 8)
      },
      original: { fd, peer in
        _ = cnm_original().pointee.write!(fd, [7], 1)
        var b = [UInt8](repeating: 0, count: 8)
        return cnm_original().pointee.read!(peer, &b, 8)
      })
  }

  @Test("errno and result equal the original's", arguments: ErrnoTests.cases)
  func errnoPreserved(_ call: ErrnoCase) throws {
    _ = SharedMonitor.sink
    let pair = try SocketPair()
    defer { pair.close() }
    let flags = fcntl(pair.server, F_GETFL)
    _ = fcntl(pair.server, F_SETFL, flags | O_NONBLOCK)
    #expect(ConnectionTable.tracked(pair.client) != nil && ConnectionTable.tracked(pair.server) != nil)

    errno = sentinel
    let originalResult = call.original(pair.client, pair.server)
    let originalErrno = errno
    errno = sentinel
    let hookedResult = call.hooked(pair.client, pair.server)
    let hookedErrno = errno
    #expect(hookedResult == originalResult)
    #expect(hookedErrno == originalErrno, "\(call): hook left errno \(hookedErrno), original \(originalErrno)")
  }

  @Test("a failed and a successful connect leave errno as the original did")
  func connectErrno() throws {
    _ = SharedMonitor.sink
    let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    var address = Sockets.address(0)
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    _ = withUnsafeMutablePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, length) == 0 ? getsockname(listener, $0, &length) : -1 }
    }
    let port = UInt16(bigEndian: address.sin_port)
    close(listener)  // nobody listens there now: refused
    for expectSuccess in [false, true] {
      let server = expectSuccess ? try LoopbackServer() : nil
      let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
      var target = Sockets.address(server?.port ?? port)
      errno = sentinel
      let result = withUnsafePointer(to: &target) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
      }
      #expect(result == (expectSuccess ? 0 : -1))
      #expect(errno == (expectSuccess ? sentinel : ECONNREFUSED))
      errno = sentinel
      #expect(close(fd) == 0)
      #expect(errno == sentinel, "close of a tracked socket keeps errno")
    }
  }
}
