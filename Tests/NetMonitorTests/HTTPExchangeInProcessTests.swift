import CNetMonitor  // SHUT_*: sys/socket.h may belong to CNetMonitor's module when it is loaded first
import Foundation
import Glibc
import Testing

@testable import NetMonitor

extension [Transaction] {
  var http: [HTTPRecord] { compactMap { if case .http(let record) = $0 { record } else { nil } } }
}

/// HTTP/1.x read from the bytes of the test process's own sockets, against the Python server.
@Suite("HTTP exchanges in-process", .serialized)
struct HTTPExchangeInProcessTests {
  @Test("keep-alive: four exchanges on one connection are four records, exact sizes, reuse flagged")
  func keepAlive() throws {
    let server = try LoopbackServer()
    let requests = [
      "GET /bytes/1000?token=abc123&page=2 HTTP/1.1\r\nHost: 127.0.0.1:\(server.port)\r\n\r\n",
      "GET /chunked/5000 HTTP/1.1\r\nHost: example.test\r\n\r\n",
      "HEAD /bytes/777 HTTP/1.1\r\nHost: example.test\r\n\r\n",
      "POST /echo HTTP/1.1\r\nHost: example.test\r\nContent-Length: 11\r\n\r\nhello world",
      "GET /status/404 HTTP/1.1\r\nHost: example.test\r\nConnection: close\r\n\r\n",
    ]
    let (received, records) = try SharedMonitor.records { () throws -> [UInt8] in
      let fd = try Sockets.connect(server.port)
      for request in requests { try Sockets.sendAll(fd, request) }  // pipelined
      let received = try Sockets.receiveAll(fd)
      close(fd)
      return received
    }
    // Other suites run at the same time: keep only this connection's records.
    let connection = try #require(records.connections.first { $0.peerPort == server.port })
    let exchanges = records.http.filter { $0.connectionId == connection.id }.sorted { $0.startUnixNs < $1.startUnixNs }
    try #require(exchanges.count == requests.count, "\(exchanges.map { "\($0.method) \($0.target) \($0.status.map(String.init) ?? "-") \($0.requestBytes)/\($0.responseBytes)" })")
    #expect(exchanges.map(\.method) == ["GET", "GET", "HEAD", "POST", "GET"])
    #expect(exchanges.map(\.status) == [200, 200, 200, 200, 404])
    #expect(exchanges[0].target == "/bytes/1000?token=REDACTED&page=2")
    #expect(exchanges[1].host == "example.test")
    #expect(exchanges.map(\.reusedConnection) == [false, true, true, true, true])
    #expect(exchanges.map(\.requestBytes) == requests.map { UInt64($0.utf8.count) })
    #expect(exchanges.map(\.responseBytes).reduce(0, +) == UInt64(received.count))
    #expect(exchanges.allSatisfy { $0.scheme == .http && $0.ttfbMs != nil && $0.ttfbMs! <= $0.durationMs })
    #expect(connection.httpExchanges == requests.count)
    // Every exchange names its peer; only the first carries the connection's setup.
    #expect(exchanges.allSatisfy { $0.role == .client && $0.peerAddress == "127.0.0.1" && $0.peerPort == server.port })
    #expect(exchanges[0].connectMs == connection.connectMs && exchanges[0].connectMs != nil)
    #expect(exchanges.dropFirst().allSatisfy { $0.connectMs == nil && $0.dnsMs == nil && $0.tlsMs == nil })
    // Exchanges start on the wall clock, within their connection's lifetime.
    let connectionEnd = connection.startUnixNs + UInt64(connection.durationMs * 1_000_000)
    #expect(exchanges.allSatisfy { $0.startUnixNs >= connection.startUnixNs && $0.startUnixNs <= connectionEnd })
    #expect(abs(Int(exchanges[0].startUnixNs / 1_000_000_000) - time(nil)) < 60)
  }

  @Test("a request that repeats the last one keeps its own target, one at a time or pipelined")
  func repeatedRequests() throws {
    let server = try LoopbackServer()
    func request(_ size: Int) -> String { "GET /bytes/\(size) HTTP/1.1\r\nHost: 127.0.0.1:\(server.port)\r\n\r\n" }
    // The request parser compares a request equal to the last one instead of parsing it, and the
    // exchange then uses the copy of its head made already (`HeadCopy`, by head serial): each
    // record must still name its own request, whether it repeats the last, follows another, or
    // shares the slots with a pipelined one.
    let alone = [10, 10, 20, 10, 10]
    let pipelined = [20, 10]
    let (_, records) = try SharedMonitor.records { () throws -> Void in
      let fd = try Sockets.connect(server.port)
      defer { close(fd) }
      for size in alone {
        try Sockets.sendAll(fd, request(size))
        _ = try Sockets.receiveResponses(fd, count: 1)
      }
      try Sockets.sendAll(fd, pipelined.map(request).joined())
      _ = try Sockets.receiveResponses(fd, count: pipelined.count)
      try Sockets.sendAll(fd, request(10))
      _ = try Sockets.receiveResponses(fd, count: 1)
    }
    let connection = try #require(records.connections.first { $0.peerPort == server.port })
    let exchanges = records.http.filter { $0.connectionId == connection.id }.sorted { $0.startUnixNs < $1.startUnixNs }
    let sizes = alone + pipelined + [10]
    #expect(exchanges.map(\.target) == sizes.map { "/bytes/\($0)" })
    #expect(exchanges.map(\.requestBytes) == sizes.map { UInt64(request($0).utf8.count) })
    #expect(exchanges.allSatisfy { $0.method == "GET" && $0.host == "127.0.0.1:\(server.port)" && $0.status == 200 })
  }

  @Test("a close-delimited response ends when the connection closes")
  func closeDelimited() throws {
    let server = try LoopbackServer()
    let (received, records) = try SharedMonitor.records { () throws -> [UInt8] in
      let fd = try Sockets.connect(server.port)
      try Sockets.sendAll(fd, "GET /close/3000 HTTP/1.1\r\nHost: x\r\n\r\n")
      let received = try Sockets.receiveAll(fd)
      close(fd)
      return received
    }
    let connection = try #require(records.connections.first { $0.peerPort == server.port })
    let exchange = try #require(records.http.first { $0.connectionId == connection.id })
    #expect(exchange.status == 200)
    #expect(exchange.responseBytes == UInt64(received.count))
  }

  @Test("a response that ends before its request (the body cut short) is recorded when the connection closes")
  func responseBeforeRequestEnds() throws {
    let server = try LoopbackServer()
    // Content-Length promises 100 bytes, 10 come, then the client stops sending: the server reads
    // to the end of the stream and echoes the 10. The response is complete, the request never is.
    let head = "POST /echo HTTP/1.1\r\nHost: 127.0.0.1:\(server.port)\r\nContent-Length: 100\r\n\r\n"
    let (received, records) = try SharedMonitor.records { () throws -> [UInt8] in
      let fd = try Sockets.connect(server.port)
      try Sockets.sendAll(fd, head + "0123456789")
      shutdown(fd, Int32(SHUT_WR))
      let received = try Sockets.receiveAll(fd)
      close(fd)
      return received
    }
    let connection = try #require(records.connections.first { $0.peerPort == server.port })
    let exchanges = records.http.filter { $0.connectionId == connection.id }
    #expect(exchanges.count == 1)
    #expect(exchanges.first?.method == "POST" && exchanges.first?.target == "/echo")
    #expect(exchanges.first?.status == 200)
    #expect(exchanges.first?.responseBytes == UInt64(received.count))
    #expect(connection.httpExchanges == 1)
  }
}
