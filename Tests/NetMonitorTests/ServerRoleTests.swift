import CNetMonitor  // SOCK_*: sys/socket.h may belong to CNetMonitor's module when it is loaded first
import Foundation
import Glibc
import Testing

@testable import NetMonitor

/// The test process as an HTTP server: accept(2) makes server-role connections, and the requests
/// it reads and the responses it writes become server-side http records. The client is Python's
/// urllib in another process.
@Suite("Server role in-process", .serialized)
struct ServerRoleTests {
  /// Serves `count` keep-alive requests on one accepted connection with plain reads and writes.
  private static func serve(_ listener: Int32, responses: [String]) {
    let fd = accept(listener, nil, nil)
    guard fd >= 0 else { return }
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
    close(fd)
  }

  @Test("requests read and responses written are server-side http records")
  func serverExchanges() throws {
    _ = SharedMonitor.sink
    let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    defer { close(listener) }
    var address = Sockets.address(0)
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    _ = withUnsafeMutablePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        bind(listener, $0, length) == 0 && listen(listener, 4) == 0 ? getsockname(listener, $0, &length) : -1
      }
    }
    let port = UInt16(bigEndian: address.sin_port)
    let bodies = ["first", String(repeating: "z", count: 3000)]
    let responses = bodies.map { "HTTP/1.1 200 OK\r\nContent-Length: \($0.utf8.count)\r\n\r\n\($0)" }
    let client = """
      import http.client
      connection = http.client.HTTPConnection("127.0.0.1", \(port), timeout=10)
      for path in ["/one?password=hunter2", "/two"]:
          connection.request("GET", path, headers={"Host": "svc.test"})
          connection.getresponse().read()
      connection.close()
      """
    let (_, records) = try SharedMonitor.records { () throws -> Void in
      // A lookup of the address the client comes from: an accepted connection must not take its name.
      var answers: UnsafeMutablePointer<addrinfo>?
      if getaddrinfo("localhost", nil, nil, &answers) == 0 { freeaddrinfo(answers) }
      let server = Thread { Self.serve(listener, responses: responses) }
      server.start()
      let python = Process()
      python.executableURL = URL(fileURLWithPath: "/usr/bin/env")
      python.arguments = ["python3", "-c", client]
      try python.run()
      python.waitUntilExit()
      #expect(python.terminationStatus == 0)
      while !server.isFinished { usleep(1000) }
    }
    let connection = try #require(records.connections.first { $0.role == .server && $0.peerAddress == "127.0.0.1" && $0.httpExchanges == 2 })
    #expect(connection.connectMs == nil)
    #expect(connection.host == nil && connection.dnsMs == nil, "no lookup named the caller: \(connection)")
    let exchanges = records.http.filter { $0.connectionId == connection.id }.sorted { $0.startUnixNs < $1.startUnixNs }
    try #require(exchanges.count == 2)
    #expect(exchanges.map(\.target) == ["/one?password=REDACTED", "/two"])
    #expect(exchanges.allSatisfy { $0.host == "svc.test" && $0.status == 200 && $0.method == "GET" })
    #expect(exchanges.map(\.responseBytes) == responses.map { UInt64($0.utf8.count) })
    #expect(exchanges.map(\.reusedConnection) == [false, true])
    #expect(exchanges.map(\.requestBytes).reduce(0, +) == connection.bytesReceived)
  }
}
