import CNetMonitor  // SOCK_*: sys/socket.h may belong to CNetMonitor's module when it is loaded first
import Foundation
import Glibc

/// The test process as an HTTP/1.1 server on 127.0.0.1 (its accepted connections are server-role
/// connections), with a client in another process: Python's http.client.
enum InProcessServer {
  /// A listening socket on 127.0.0.1 and its port.
  static func listen() -> (fd: Int32, port: UInt16) {
    let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    var address = Sockets.address(0)
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    _ = withUnsafeMutablePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        bind(listener, $0, length) == 0 && Glibc.listen(listener, 4) == 0 ? getsockname(listener, $0, &length) : -1
      }
    }
    return (listener, UInt16(bigEndian: address.sin_port))
  }

  /// Answers each request read on one accepted connection with the next of `responses`, each in one
  /// write, with plain reads and writes; hands the connection to `beforeClose`, then closes it.
  static func serve(_ listener: Int32, responses: [String], beforeClose: (Int32) -> Void = { _ in }) {
    let fd = accept(listener, nil, nil)
    guard fd >= 0 else { return }
    defer { close(fd) }
    var buffer = [UInt8](repeating: 0, count: 65536)
    var pending = ""
    var answered = 0
    while answered < responses.count {
      let count = read(fd, &buffer, buffer.count)
      if count <= 0 { break }
      pending += String(decoding: buffer[0..<count], as: UTF8.self)
      while let end = pending.range(of: "\r\n\r\n"), answered < responses.count {
        pending.removeSubrange(pending.startIndex..<end.upperBound)
        let response = Array(responses[answered].utf8)
        _ = response.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        answered += 1
      }
    }
    beforeClose(fd)
  }

  /// Starts Python's http.client on one keep-alive connection to `port`, sending `GET` for each
  /// of `paths` in turn (`Host: svc.test`) and reading each response, one cut short as far as it goes.
  static func startClient(port: UInt16, paths: [String]) throws -> Process {
    let list = paths.map { "\"\($0)\"" }.joined(separator: ", ")
    let program = """
      import http.client
      connection = http.client.HTTPConnection("127.0.0.1", \(port), timeout=10)
      for path in [\(list)]:
          connection.request("GET", path, headers={"Host": "svc.test"})
          try:
              connection.getresponse().read()
          except http.client.IncompleteRead:
              pass
      connection.close()
      """
    let python = Process()
    python.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    python.arguments = ["python3", "-c", program]
    try python.run()
    return python
  }
}
