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
  @Test("requests read and responses written are server-side http records")
  func serverExchanges() throws {
    _ = SharedMonitor.sink
    let (listener, port) = InProcessServer.listen()
    defer { close(listener) }
    let bodies = ["first", String(repeating: "z", count: 3000)]
    let responses = bodies.map { "HTTP/1.1 200 OK\r\nContent-Length: \($0.utf8.count)\r\n\r\n\($0)" }
    let (_, records) = try SharedMonitor.records { () throws -> Void in
      // A lookup of the address the client comes from: an accepted connection must not take its name.
      var answers: UnsafeMutablePointer<addrinfo>?
      if getaddrinfo("localhost", nil, nil, &answers) == 0 { freeaddrinfo(answers) }
      let server = Thread { InProcessServer.serve(listener, responses: responses) }
      server.start()
      let python = try InProcessServer.startClient(port: port, paths: ["/one?password=hunter2", "/two"])
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
