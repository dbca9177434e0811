import CNetMonitor  // SOCK_*: sys/socket.h may belong to CNetMonitor's module when it is loaded first
import Glibc

/// Plain socket calls from the test process itself: they go through the test binary's GOT, which
/// NetMonitor has rebound, exactly as a Swift server's calls would.
enum Sockets {
  struct Failure: Error, CustomStringConvertible {
    var call: String
    var code: Int32
    var description: String { "\(call): \(String(cString: strerror(code)))" }
  }

  static func address(_ port: UInt16, _ ip: String = "127.0.0.1") -> sockaddr_in {
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = port.bigEndian
    inet_pton(AF_INET, ip, &address.sin_addr)
    return address
  }

  /// A port of 127.0.0.1 that nobody listens on: bound, then closed (a connect to it is refused).
  static func unusedPort() throws -> UInt16 {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    defer { close(fd) }
    var bound = address(0)
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let result = withUnsafeMutablePointer(to: &bound) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
    }
    guard result else { throw Failure(call: "bind", code: errno) }
    return UInt16(bigEndian: bound.sin_port)
  }

  /// A blocking TCP connection to 127.0.0.1:`port`.
  static func connect(_ port: UInt16) throws -> Int32 {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    var target = address(port)
    let result = withUnsafePointer(to: &target) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
      }
    }
    if result != 0 {
      let code = errno
      close(fd)
      throw Failure(call: "connect", code: code)
    }
    return fd
  }

  static func sendAll(_ fd: Int32, _ text: String) throws {
    var bytes = Array(text.utf8)
    var offset = 0
    while offset < bytes.count {
      let sent = bytes.withUnsafeMutableBytes { send(fd, $0.baseAddress! + offset, $0.count - offset, 0) }
      if sent < 0 { throw Failure(call: "send", code: errno) }
      offset += sent
    }
  }

  /// Reads until the peer closes (or `limit` bytes); returns what came.
  static func receiveAll(_ fd: Int32, limit: Int = 1 << 24) throws -> [UInt8] {
    var received: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 65536)
    while received.count < limit {
      let count = recv(fd, &buffer, buffer.count, 0)
      if count < 0 { throw Failure(call: "recv", code: errno) }
      if count == 0 { break }
      received += buffer[0..<count]
    }
    return received
  }

  /// Reads `count` responses with `Content-Length` bodies, and nothing after them (the peer sends
  /// no more until asked); returns their bytes.
  static func receiveResponses(_ fd: Int32, count: Int) throws -> [UInt8] {
    var received: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 65536)
    func end(ofResponseAt start: Int) -> Int? {
      guard let blank = received.indices.dropFirst(start).dropLast(3).first(where: {
        received[$0..<$0 + 4].elementsEqual("\r\n\r\n".utf8)
      }) else { return nil }
      let head = String(decoding: received[start..<blank], as: UTF8.self).lowercased()
      let length = head.split(separator: "\r\n").lazy.compactMap { line in
        line.hasPrefix("content-length:")
          ? Int(line.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces)) : nil
      }.first ?? 0
      return received.count >= blank + 4 + length ? blank + 4 + length : nil
    }
    var complete = 0
    var start = 0
    while complete < count {
      if let end = end(ofResponseAt: start) {
        complete += 1
        start = end
        continue
      }
      let got = recv(fd, &buffer, buffer.count, 0)
      if got < 0 { throw Failure(call: "recv", code: errno) }
      if got == 0 { break }
      received += buffer[0..<got]
    }
    return received
  }

  /// The kernel's own byte counts of a TCP socket (`TCP_INFO`: `tcpi_bytes_acked`,
  /// `tcpi_bytes_received`; offsets from <linux/tcp.h>, which glibc's struct stops short of).
  static func kernelByteCounts(_ fd: Int32) -> (acked: UInt64, received: UInt64)? {
    var info = [UInt8](repeating: 0, count: 232)
    var length = socklen_t(info.count)
    guard getsockopt(fd, Int32(IPPROTO_TCP), TCP_INFO, &info, &length) == 0, length >= 136 else { return nil }
    return info.withUnsafeBytes { ($0.load(fromByteOffset: 120, as: UInt64.self), $0.load(fromByteOffset: 128, as: UInt64.self)) }
  }
}
