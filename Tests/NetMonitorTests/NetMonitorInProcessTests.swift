import CNetMonitor  // SOCK_*: sys/socket.h may belong to CNetMonitor's module when it is loaded first
import Foundation
import Glibc
import Synchronization
import Testing

@testable import NetMonitor

/// One monitor for the whole test process (hooks are process-wide), started on first use.
enum SharedMonitor {
  static let sink: InMemorySink = {
    let sink = InMemorySink()
    do {
      try NetMonitor.start(sink: sink)
    } catch {
      fatalError("\(error)")
    }
    return sink
  }()

  /// One `records` at a time in the process. Suites run in parallel, and `.serialized` orders only
  /// a suite's own tests: a lookup another suite makes between a test's lookup and its connect
  /// (libcurl resolves on a thread of its own, so the join cannot go by thread) could name the
  /// test's connection, and its records would hold the other test's.
  private static let oneAtATime = NSLock()

  /// The records that arrived after `body` ran, with the queue drained.
  static func records<T>(_ body: () throws -> T) rethrows -> (T, [Transaction]) {
    oneAtATime.lock()
    defer { oneAtATime.unlock() }
    _ = sink
    NetMonitor.flush()
    let before = sink.count
    let value = try body()
    NetMonitor.flush()
    return (value, Array(sink.transactions.dropFirst(before)))
  }
}

extension [Transaction] {
  var connections: [ConnectionRecord] {
    compactMap { if case .connection(let record) = $0 { record } else { nil } }
  }
  var dns: [DNSRecord] { compactMap { if case .dns(let record) = $0 { record } else { nil } } }
}

/// NetMonitor in this very process: the test's own socket calls go through the rebound GOT of the
/// test binary, against a real Python server on 127.0.0.1.
@Suite("NetMonitor in-process", .serialized)
struct NetMonitorInProcessTests {
  @Test("a plain exchange: exact socket byte counts, connect time, peer")
  func plainExchange() throws {
    let server = try LoopbackServer()
    let request = "GET /bytes/5000 HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
    let (received, records) = try SharedMonitor.records { () throws -> [UInt8] in
      let fd = try Sockets.connect(server.port)
      try Sockets.sendAll(fd, request)
      let received = try Sockets.receiveAll(fd)
      close(fd)
      return received
    }
    let connection = try #require(records.connections.first { $0.peerPort == server.port })
    #expect(connection.role == .client)
    #expect(connection.transport == .tcp)
    #expect(connection.peerAddress == "127.0.0.1")
    #expect(connection.bytesSent == UInt64(request.utf8.count))
    #expect(connection.bytesReceived == UInt64(received.count))
    #expect(received.count > 5000)
    #expect(connection.connectMs != nil)
    #expect(connection.tlsMs == nil && connection.tlsVersion == nil && connection.tlsBytesSent == nil)
    #expect(connection.error == nil)
    #expect(connection.durationMs >= (connection.connectMs ?? 0))
  }

  @Test("getaddrinfo is a dns record, and the connection to its answer knows the host")
  func dnsJoin() throws {
    let server = try LoopbackServer()
    let (_, records) = try SharedMonitor.records { () throws -> Void in
      var hints = addrinfo()
      hints.ai_family = AF_INET
      hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
      var answers: UnsafeMutablePointer<addrinfo>?
      #expect(getaddrinfo("localhost", String(server.port), &hints, &answers) == 0)
      defer { freeaddrinfo(answers) }
      let answer = try #require(answers)
      let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
      #expect(connect(fd, answer.pointee.ai_addr, answer.pointee.ai_addrlen) == 0)
      try Sockets.sendAll(fd, "GET /bytes/10 HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
      _ = try Sockets.receiveAll(fd)
      close(fd)
    }
    let lookup = try #require(records.dns.first { $0.host == "localhost" })
    #expect(lookup.addresses.contains("127.0.0.1"))
    #expect(lookup.error == nil)
    let connection = try #require(records.connections.first { $0.peerPort == server.port })
    #expect(connection.host == "localhost")
    #expect(connection.dnsMs == lookup.durationMs)
  }

  @Test("a failed lookup is a dns record with its EAI_* error")
  func failedLookup() throws {
    let (status, records) = SharedMonitor.records { () -> Int32 in
      var answers: UnsafeMutablePointer<addrinfo>?
      let status = getaddrinfo("no-such-host.invalid", nil, nil, &answers)
      if status == 0 { freeaddrinfo(answers) }
      return status
    }
    #expect(status != 0)
    let lookup = try #require(records.dns.first { $0.host == "no-such-host.invalid" })
    #expect(lookup.addresses.isEmpty)
    #expect(lookup.error?.call == "getaddrinfo")
    #expect(lookup.error?.code.hasPrefix("EAI_") == true)
  }

  @Test("a refused connect is a connection record with ECONNREFUSED, and errno reaches the caller")
  func refused() throws {
    let port = try freePort()
    let (code, records) = SharedMonitor.records { () -> Int32 in
      let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
      var target = Sockets.address(port)
      let result = withUnsafePointer(to: &target) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
      }
      let code = result == 0 ? 0 : errno
      close(fd)
      return code
    }
    #expect(code == ECONNREFUSED)
    let connection = try #require(records.connections.first { $0.peerPort == port })
    #expect(connection.error?.call == "connect")
    #expect(connection.error?.code == "ECONNREFUSED")
    #expect(connection.bytesSent == 0 && connection.bytesReceived == 0)
  }

  @Test("a non-blocking connect is timed until SO_ERROR says it is established")
  func nonBlockingConnect() throws {
    let server = try LoopbackServer()
    let (_, records) = try SharedMonitor.records { () throws -> Void in
      let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
      var target = Sockets.address(server.port)
      let result = withUnsafePointer(to: &target) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
      }
      #expect(result == 0 || errno == EINPROGRESS)
      var descriptor = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
      #expect(poll(&descriptor, 1, 5000) == 1)
      var error: Int32 = -1
      var length = socklen_t(MemoryLayout<Int32>.size)
      #expect(getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length) == 0 && error == 0)
      close(fd)
    }
    let connection = try #require(records.connections.first { $0.peerPort == server.port })
    #expect(connection.connectMs != nil)
    #expect(connection.error == nil)
  }

  @Test("a non-blocking connect closed before it completed is a connect error (ECANCELED: the host gave up on it)")
  func abandonedConnect() throws {
    // A listener whose backlog is full does not complete new connections: bind, listen(0), and
    // fill the queue first.
    let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    defer { close(listener) }
    var address = Sockets.address(0)
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    _ = withUnsafeMutablePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        bind(listener, $0, length) == 0 && listen(listener, 0) == 0 ? getsockname(listener, $0, &length) : -1
      }
    }
    let port = UInt16(bigEndian: address.sin_port)
    var fillers: [Int32] = []
    defer { fillers.forEach { close($0) } }
    let (_, records) = SharedMonitor.records { () -> Void in
      for _ in 0..<8 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        var target = Sockets.address(port)
        _ = withUnsafePointer(to: &target) {
          $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        fillers.append(fd)
      }
      usleep(50_000)
      for fd in fillers { close(fd) }
      fillers.removeAll()
    }
    let abandoned = records.connections.filter { $0.peerPort == port && $0.error?.code == "ECANCELED" }
    #expect(!abandoned.isEmpty, "with a full backlog some connects stay in progress until closed")
    #expect(abandoned.allSatisfy { $0.error?.call == "connect" && $0.connectMs == nil })
    // The ones the queue took completed: no error, and no connect time (nobody asked when).
    #expect(records.connections.filter { $0.peerPort == port }.allSatisfy { $0.error == nil || $0.error?.code == "ECANCELED" })
  }

  /// Socket byte counts equal the kernel's own (TCP_INFO) for every connection, under 16 threads.
  @Test("byte counts equal TCP_INFO's under 16 threads × 12 connections")
  func kernelAgreement() throws {
    let server = try LoopbackServer()
    let port = server.port
    let threads = 16, perThread = 12
    let kernel = Mutex<[[UInt64]]>([])
    let (_, records) = SharedMonitor.records { () -> Void in
      DispatchQueue.concurrentPerform(iterations: threads) { thread in
        for round in 0..<perThread {
          guard let fd = try? Sockets.connect(port) else { continue }
          let size = 100 + (thread * 7919 + round * 104_729) % 60_000
          let body = String(repeating: "b", count: size)
          try? Sockets.sendAll(fd, "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: \(size)\r\nConnection: close\r\n\r\n\(body)")
          _ = try? Sockets.receiveAll(fd)
          // The kernel counts sequence numbers: our SYN in bytes_acked and the server's FIN (it
          // closes, we read to the end) in bytes_received each take one that carries no data byte.
          if let counts = Sockets.kernelByteCounts(fd) {
            kernel.withLock { $0.append([counts.acked - 1, counts.received - 1]) }
          }
          close(fd)
        }
      }
    }
    let ours = records.connections.filter { $0.peerPort == port }.map { [$0.bytesSent, $0.bytesReceived] }
    let theirs = kernel.withLock { $0 }
    #expect(ours.count == threads * perThread)
    #expect(ours.sorted { $0.lexicographicallyPrecedes($1) } == theirs.sorted { $0.lexicographicallyPrecedes($1) })
  }

  private func freePort() throws -> UInt16 {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    defer { close(fd) }
    var address = Sockets.address(0)
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    _ = withUnsafeMutablePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
        bind(fd, pointer, length) == 0 ? getsockname(fd, pointer, &length) : -1
      }
    }
    return UInt16(bigEndian: address.sin_port)
  }
}

