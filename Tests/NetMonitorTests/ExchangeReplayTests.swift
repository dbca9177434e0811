import CNetMonitor  // SOCK_*: sys/socket.h may belong to CNetMonitor's module when it is loaded first
import Foundation
import Glibc
import Testing
import TestSupport

@testable import NetMonitor

/// Simple exchanges (a GET head alone, a response framed by its Content-Length) are recorded by the
/// C hooks from a template (`cnm_replay_take`, ``ExchangeReplay``): their records must be those
/// the Swift path would have made, and an exchange the hooks stop taking halfway (its request
/// simple, its response not) must still be recorded whole.
/// What the server thread counted, read once it finished.
private final class ReplayCount: @unchecked Sendable {
  var value: UInt64 = 0
}

/// A thread of its own that runs the jobs it is given, one at a time, each to its end.
private final class Worker: @unchecked Sendable {
  private let lock = NSCondition()
  private var jobs: [@Sendable () -> Void] = []

  init() {
    let thread = Thread { [self] in
      while true {
        lock.lock()
        while jobs.isEmpty { lock.wait() }
        let job = jobs.removeFirst()
        lock.unlock()
        job()
      }
    }
    thread.start()
  }

  /// Runs `job` on the worker's thread and waits for it.
  func run(_ job: @escaping @Sendable () -> Void) {
    let done = DispatchSemaphore(value: 0)
    lock.lock()
    jobs.append {
      job()
      done.signal()
    }
    lock.signal()
    lock.unlock()
    done.wait()
  }
}

@Suite("Exchanges that repeat, recorded by the hooks", .serialized)
struct ExchangeReplayTests {
  /// The exchanges the hooks replayed on `fd` so far.
  static func replays(_ fd: Int32) -> UInt64 {
    guard let slot = ConnectionTable.tracked(fd) else { return 0 }
    return cnm_load_u64(slot.pointer(to: \.head.replay_state)!) >> UInt64(CNM_REPLAY_COUNT_SHIFT)
  }

  @Test("a server answering a repeated request the same way: the same records, a chunked response recorded whole")
  func serverRepeats() throws {
    _ = SharedMonitor.sink
    let (listener, port) = InProcessServer.listen()
    defer { close(listener) }
    let same = "HTTP/1.1 200 OK\r\nContent-Length: 1024\r\n\r\n" + String(repeating: "r", count: 1024)
    let other = "HTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\nX-Changed: yes\r\n\r\na\r\n0123456789\r\n0\r\n\r\n"
    // Exchange 2's record is the replay's template: the hooks take 3…14, the chunked responses
    // (another status, another head) too. 12 replays.
    let responses = Array(repeating: same, count: 8) + [other] + Array(repeating: same, count: 4) + [other]
    let (replays, records) = try SharedMonitor.records { () throws -> UInt64 in
      let replays = ReplayCount()
      let server = Thread {
        InProcessServer.serve(listener, responses: responses) { replays.value = Self.replays($0) }
      }
      server.start()
      let python = try InProcessServer.startClient(
        port: port, paths: Array(repeating: "/same?id=7", count: responses.count))
      python.waitUntilExit()
      #expect(python.terminationStatus == 0)
      while !server.isFinished { usleep(1000) }
      return replays.value
    }
    #expect(replays == 12)
    let connection = try #require(
      records.connections.first { $0.role == .server && $0.httpExchanges == responses.count })
    let exchanges = records.http.filter { $0.connectionId == connection.id }.sorted { $0.startUnixNs < $1.startUnixNs }
    try #require(exchanges.count == responses.count)
    #expect(exchanges.allSatisfy { $0.method == "GET" && $0.target == "/same?id=7" && $0.host == "svc.test" })
    #expect(exchanges.map(\.status) == responses.map { $0 == same ? 200 : 201 })
    #expect(exchanges.map(\.responseBytes) == responses.map { UInt64($0.utf8.count) })
    #expect(exchanges.map(\.responseBytes).reduce(0, +) == connection.bytesSent)
    #expect(exchanges.map(\.requestBytes).reduce(0, +) == connection.bytesReceived)
    #expect(Set(exchanges.map(\.requestBytes)).count == 1)
    #expect(exchanges.map(\.reusedConnection) == [false] + Array(repeating: true, count: responses.count - 1))
    #expect(exchanges.allSatisfy { $0.role == .server && $0.peerAddress == "127.0.0.1" && $0.connectMs == nil })
    #expect(exchanges.allSatisfy { $0.ttfbMs != nil && $0.ttfbMs! <= $0.durationMs && $0.durationMs < 10_000 })
    // Each exchange starts after the one before ended, on the wall clock of its connection.
    for (before, after) in zip(exchanges, exchanges.dropFirst()) {
      #expect(before.startUnixNs + UInt64(before.durationMs * 1_000_000) <= after.startUnixNs + 1_000)
    }
    #expect(exchanges[0].startUnixNs >= connection.startUnixNs)
  }

  @Test("a client repeating a request to nginx: one at a time, pipelined, and one left unanswered at close")
  func clientRepeats() throws {
    let scratch = try TemporaryDirectory("injection")
    defer { scratch.remove() }
    let tls = try LoopbackServer.makeCertificate(in: scratch.url)
    let server = try LoopbackNginx(files: ["r.bin": 700], tls: tls)
    let request = "GET /r.bin HTTP/1.1\r\nHost: 127.0.0.1:\(server.port)\r\n\r\n"
    let (replays, records) = try SharedMonitor.records { () throws -> UInt64 in
      let fd = try Sockets.connect(server.port)
      defer { close(fd) }
      for _ in 0..<6 {
        try Sockets.sendAll(fd, request)
        _ = try Sockets.receiveResponses(fd, count: 1)
      }
      try Sockets.sendAll(fd, request + request)  // pipelined: one call, not a repeat of one request
      _ = try Sockets.receiveResponses(fd, count: 2)
      for _ in 0..<3 {
        try Sockets.sendAll(fd, request)
        _ = try Sockets.receiveResponses(fd, count: 1)
      }
      try Sockets.sendAll(fd, request)  // its response is never read
      return Self.replays(fd)
    }
    // nginx's Date changes once a second: a response head that changed is parsed, not replayed.
    #expect(replays >= 1, "the hooks replayed no exchange")
    let connection = try #require(records.connections.first { $0.peerPort == server.port })
    let exchanges = records.http.filter { $0.connectionId == connection.id }.sorted { $0.startUnixNs < $1.startUnixNs }
    #expect(exchanges.count == 12)
    #expect(connection.httpExchanges == 12)
    let answered = exchanges.dropLast()
    #expect(answered.allSatisfy {
      $0.method == "GET" && $0.target == "/r.bin" && $0.status == 200 && $0.role == .client
        && $0.requestBytes == UInt64(request.utf8.count) && $0.ttfbMs != nil && $0.ttfbMs! <= $0.durationMs
    })
    #expect(Set(answered.map(\.responseBytes)).count == 1)
    // The last request: sent, and closed before a response was read (no_response).
    let unanswered = try #require(exchanges.last)
    #expect(unanswered.method == "GET" && unanswered.target == "/r.bin" && unanswered.status == nil)
    #expect(unanswered.requestBytes == UInt64(request.utf8.count) && unanswered.responseBytes == 0)
    #expect(unanswered.ttfbMs == nil && unanswered.reusedConnection)
    #expect(connection.bytesSent == UInt64(request.utf8.count * 12))
    #expect(exchanges.map(\.responseBytes).reduce(0, +) == connection.bytesReceived)
  }

  @Test("a connection that moves between threads: only its owner replays, and a request replayed on one thread whose response another writes is recorded")
  func threadsTakeTurns() throws {
    _ = SharedMonitor.sink
    let (listener, port) = InProcessServer.listen()
    defer { close(listener) }
    let response = Array(("HTTP/1.1 200 OK\r\nContent-Length: 300\r\n\r\n" + String(repeating: "t", count: 300)).utf8)
    // Who reads each request and who writes its response. Exchanges 0…3 on A: 2 and 3 replayed
    // (owner A). 4: A's replay takes the request, B writes the response: B is not the owner, so the
    // response waits for its request, which B's next read has Swift parse. 5 on B arms it for B:
    // 6…8 replayed. 9: B takes the request, A answers; 10 on A arms it for A; 11 replayed. 6 replays.
    let turns: [(read: Int, write: Int)] =
      [(0, 0), (0, 0), (0, 0), (0, 0), (0, 1), (1, 1), (1, 1), (1, 1), (1, 1), (1, 0), (0, 0), (0, 0)]
    let (replays, records) = try SharedMonitor.records { () throws -> UInt64 in
      let python = try InProcessServer.startClient(port: port, paths: Array(repeating: "/turns", count: turns.count))
      let fd = accept(listener, nil, nil)
      try #require(fd >= 0)
      let workers = [Worker(), Worker()]
      for turn in turns {
        workers[turn.read].run {
          var buffer = [UInt8](repeating: 0, count: 65536)
          _ = read(fd, &buffer, buffer.count)  // one request a call: the client waits for each response
        }
        workers[turn.write].run { _ = response.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) } }
      }
      let replays = Self.replays(fd)
      workers[0].run { close(fd) }
      python.waitUntilExit()
      #expect(python.terminationStatus == 0)
      return replays
    }
    #expect(replays == 6)
    let connection = try #require(records.connections.first { $0.role == .server && $0.httpExchanges == turns.count })
    let exchanges = records.http.filter { $0.connectionId == connection.id }.sorted { $0.startUnixNs < $1.startUnixNs }
    try #require(exchanges.count == turns.count)
    #expect(exchanges.allSatisfy {
      $0.method == "GET" && $0.target == "/turns" && $0.status == 200 && $0.responseBytes == UInt64(response.count)
        && $0.ttfbMs != nil && $0.ttfbMs! <= $0.durationMs
    })
    #expect(exchanges.map(\.requestBytes).reduce(0, +) == connection.bytesReceived)
    #expect(exchanges.map(\.responseBytes).reduce(0, +) == connection.bytesSent)
    #expect(exchanges.map(\.reusedConnection) == [false] + Array(repeating: true, count: turns.count - 1))
  }

  @Test("a response whose body follows its head in other calls, the last part by sendfile; one cut short by close")
  func bodyInOtherCalls() throws {
    _ = SharedMonitor.sink
    let (listener, port) = InProcessServer.listen()
    defer { close(listener) }
    let scratch = try TemporaryDirectory("injection")
    defer { scratch.remove() }
    let bodyFile = scratch.file("body.bin")
    try Data(repeating: UInt8(ascii: "s"), count: 1500).write(to: bodyFile)
    let head = Array("HTTP/1.1 200 OK\r\nContent-Length: 2000\r\n\r\n".utf8)
    let firstPart = [UInt8](repeating: UInt8(ascii: "w"), count: 500)
    let exchanges = 10
    // Exchanges 0 and 1 are parsed (1 arms the replay), 2…9 replayed: a head alone, 500 bytes
    // written, 1500 sent from a file. The 11th stops halfway: its head and 500 bytes, then close.
    let (replays, records) = try SharedMonitor.records { () throws -> UInt64 in
      let python = try InProcessServer.startClient(port: port, paths: Array(repeating: "/parts", count: exchanges + 1))
      let fd = accept(listener, nil, nil)
      try #require(fd >= 0)
      let file = open(bodyFile.path, O_RDONLY)
      defer { Glibc.close(file) }
      var buffer = [UInt8](repeating: 0, count: 65536)
      for exchange in 0...exchanges {
        _ = read(fd, &buffer, buffer.count)  // one request a call: the client waits for each response
        _ = head.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        _ = firstPart.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        if exchange < exchanges {
          var offset = off_t(0)
          #expect(sendfile(fd, file, &offset, 1500) == 1500)
        }
      }
      let replays = Self.replays(fd)
      close(fd)
      python.waitUntilExit()
      #expect(python.terminationStatus == 0)
      return replays
    }
    #expect(replays == UInt64(exchanges - 2))
    let connection = try #require(records.connections.first { $0.role == .server && $0.httpExchanges == exchanges + 1 })
    let recorded = records.http.filter { $0.connectionId == connection.id }.sorted { $0.startUnixNs < $1.startUnixNs }
    try #require(recorded.count == exchanges + 1)
    let whole = UInt64(head.count + 2000)
    #expect(recorded.map(\.responseBytes) == Array(repeating: whole, count: exchanges) + [UInt64(head.count + 500)])
    #expect(recorded.allSatisfy { $0.method == "GET" && $0.target == "/parts" && $0.status == 200 })
    #expect(recorded.allSatisfy { $0.ttfbMs != nil && $0.ttfbMs! <= $0.durationMs })
    #expect(recorded.map(\.responseBytes).reduce(0, +) == connection.bytesSent)
    #expect(recorded.map(\.requestBytes).reduce(0, +) == connection.bytesReceived)
  }
}

/// One exchange of ``SimpleExchangeTests``: a request written in one call, and its response
/// written in `responsePieces`, one call each.
private struct ScriptedExchange {
  /// The request, written in these pieces (a head, then its body in another call).
  let requestPieces: [String]
  /// Interim answers the server writes once it read the request's first piece, which the client
  /// reads before it writes the others (`Expect: 100-continue`), a pause later.
  let interims: [String]
  /// Whether the server reads each piece before the client writes the next, a pause later (a
  /// head in pieces, as nginx reads one of over 1 KiB).
  let piecewise: Bool
  let responsePieces: [String]
  /// Whether the hooks record it (both heads simple), once the replay is armed.
  let simple: Bool

  init(_ request: String, _ responsePieces: String..., simple: Bool) {
    self.init(requestPieces: [request], responsePieces, simple: simple)
  }

  init(requestPieces: [String], interims: [String] = [], piecewise: Bool = false, _ responsePieces: [String], simple: Bool) {
    self.requestPieces = requestPieces
    self.interims = interims
    self.piecewise = piecewise
    self.responsePieces = responsePieces
    self.simple = simple
  }

  var request: String { requestPieces.joined() }

  var responseLength: Int { (interims + responsePieces).reduce(0) { $0 + $1.utf8.count } }
}

@Suite("Exchanges that differ, recorded by the hooks", .serialized)
struct SimpleExchangeTests {
  /// Simple exchanges that all differ (requests with bodies among them, in the head's call and after
  /// it; answers without a body: HEAD's, a 204, a 304), and between them every kind the hooks
  /// refuse: a 100 Continue before the answer, a chunked response, a Content-Length list, a header
  /// name the hooks do not read, `Connection: close`. Exchanges 0 and 1 arm the replay.
  private static let script: [ScriptedExchange] = {
    let longTarget = "/long?" + (0..<40).map { "k\($0)=v\($0 * 7)" }.joined(separator: "&")
    let ok5 = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n"
    return [
      ScriptedExchange("GET /a HTTP/1.1\r\nHost: svc.test\r\n\r\n", ok5 + "hello", simple: false),
      ScriptedExchange(
        "GET /b?x=1&next=http://z/w HTTP/1.1\r\nHost: svc.test\r\nX-Request-Id: 1\r\n\r\n",
        "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n", simple: false),
      ScriptedExchange(
        "GET /c/d.bin HTTP/1.1\r\nHost:   svc.test  \r\nAccept: */*\r\nConnection: Keep-Alive\r\n\r\n",
        "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nConnection: keep-alive\r\nContent-Length: 3000\r\n\r\n",
        String(repeating: "d", count: 1000), String(repeating: "e", count: 2000), simple: true),
      ScriptedExchange(
        "GET http://svc.test/e?q=1 HTTP/1.1\r\nHost: svc.test\r\nUser-Agent: t\t1\r\n\r\n",
        "HTTP/1.1 500 Internal Server Error\r\nContent-Length: 10\r\n\r\n0123456789", simple: true),
      ScriptedExchange("GET /nohost HTTP/1.1\r\nAccept: */*\r\n\r\n", "HTTP/1.1 200 \r\nContent-Length: 1\r\n\r\n!",
                       simple: true),
      ScriptedExchange(
        "POST /form HTTP/1.1\r\nHost: svc.test\r\nContent-Length: 4\r\n\r\na=b1",
        "HTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\nok", simple: true),
      ScriptedExchange(
        "GET /chunked HTTP/1.1\r\nHost: svc.test\r\n\r\n",
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n", simple: true),
      ScriptedExchange(
        "GET /after HTTP/1.1\r\nhost: other.test:8080\r\n\r\n",
        "HTTP/1.1 200 OK\r\ncontent-LENGTH:  7 \r\n\r\nsevenB!", simple: true),
      ScriptedExchange("GET \(longTarget) HTTP/1.1\r\nHost: svc.test\r\n\r\n", ok5 + "world", simple: true),
      // A browser's request as a proxy passes it on: a head of ~1,100 bytes.
      ScriptedExchange(
        "GET /app?tab=2 HTTP/1.1\r\nHost: svc.test\r\nsec-ch-ua: \"Chromium\";v=\"120\"\r\n"
          + "User-Agent: Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36\r\n"
          + "Accept: text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8\r\nAccept-Language: en-US,en;q=0.9\r\n"
          + "Cookie: session=\(String(repeating: "5e", count: 300)); theme=dark\r\nX-Forwarded-For: 203.0.113.7\r\n\r\n",
        ok5 + "hello", simple: true),
      // A target longer than a record holds (Swift keeps its first 512 bytes, and says so).
      ScriptedExchange("GET /\(String(repeating: "q", count: 600)) HTTP/1.1\r\nHost: svc.test\r\n\r\n", ok5 + "world",
                       simple: false),
      ScriptedExchange("GET /empty HTTP/1.1\r\nHost: svc.test\r\n\r\n", "HTTP/1.1 204 No Content\r\n\r\n",
                       simple: true),
      ScriptedExchange("HEAD /a HTTP/1.1\r\nHost: svc.test\r\n\r\n", "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n",
                       simple: true),
      ScriptedExchange("GET /a HTTP/1.1\r\nHost: svc.test\r\n\r\n", ok5 + "hello", simple: true),
      ScriptedExchange("GET /a HTTP/1.1\r\nHost: svc.test\r\n\r\n", ok5 + "hello", simple: true),
      ScriptedExchange("GET /a HTTP/1.1\r\nHost: svc.test\r\n\r\n", ok5 + "he", "llo", simple: true),
      ScriptedExchange(
        "GET /cached HTTP/1.1\r\nHost: svc.test\r\nIf-None-Match: \"x\"\r\n\r\n",
        "HTTP/1.1 304 Not Modified\r\nETag: \"x\"\r\nContent-Length: 5\r\n\r\n", simple: true),
      ScriptedExchange(
        "GET /big HTTP/1.1\r\nHost: svc.test\r\n\r\n", "HTTP/1.1 200 OK\r\nContent-Length: 48000\r\n\r\n",
        String(repeating: "b", count: 16000), String(repeating: "c", count: 16000),
        String(repeating: "d", count: 16000), simple: true),
      ScriptedExchange("GET /list HTTP/1.1\r\nHost: svc.test\r\n\r\n",
                       "HTTP/1.1 200 OK\r\nContent-Length: 5, 5\r\n\r\nhello", simple: false),
      ScriptedExchange("GET /name HTTP/1.1\r\nHost: svc.test\r\n\r\n",
                       "HTTP/1.1 200 OK\r\nX_Odd: 1\r\nContent-Length: 5\r\n\r\nhello", simple: false),
      ScriptedExchange(
        requestPieces: [
          "PUT /v/1 HTTP/1.1\r\nHost: svc.test\r\nContent-Type: application/json\r\nContent-Length: 11\r\n\r\n",
          "{\"a\":", "[1,2]}",
        ], ["HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"], simple: true),
      ScriptedExchange(
        requestPieces: ["POST /up HTTP/1.1\r\nHost: svc.test\r\nContent-Length: 6\r\nExpect: 100-continue\r\n\r\n", "abcdef"],
        ["HTTP/1.1 100 Continue\r\n\r\n", "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"], simple: true),
      // curl's upload: the head, a 100 Continue, the body (a pause later), the answer.
      ScriptedExchange(
        requestPieces: ["PUT /up/2 HTTP/1.1\r\nHost: svc.test\r\nContent-Length: 11\r\nExpect: 100-continue\r\n\r\n",
                        "hello", " world"],
        interims: [Self.interim], ["HTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\nok"], simple: true),
      ScriptedExchange(
        requestPieces: ["PUT /up/3 HTTP/1.1\r\nHost: svc.test\r\nTransfer-Encoding: chunked\r\nExpect: 100-continue\r\n\r\n",
                        "4\r\nabcd\r\n0\r\n\r\n"],
        interims: [Self.interim, Self.interim], ["HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n"],
        simple: true),
      // A 100 Continue taken, then an answer the hooks refuse: Swift parses both.
      ScriptedExchange(
        requestPieces: ["POST /up/4 HTTP/1.1\r\nHost: svc.test\r\nContent-Length: 3\r\nExpect: 100-continue\r\n\r\n", "abc"],
        interims: [Self.interim], ["HTTP/1.1 200 OK\r\nX_Odd: 1\r\nContent-Length: 2\r\n\r\nok"], simple: false),
      ScriptedExchange("DELETE /v/1 HTTP/1.1\r\nHost: svc.test\r\nContent-Length: 0\r\n\r\n",
                       "HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\ngone", simple: true),
      // Request heads in pieces, each read before the next is sent: cut in a line, in the blank
      // line (the body in the same piece), in three with the body after; one whose rest is not
      // simple, and one longer than the hooks read.
      ScriptedExchange(
        requestPieces: ["GET /split/1 HTTP/1.1\r\nHost: svc.test\r\nX-Long: \(String(repeating: "x", count: 300))",
                        "\r\nAccept: */*\r\n\r\n"], piecewise: true, [ok5 + "split"], simple: true),
      ScriptedExchange(
        requestPieces: ["PUT /split/2 HTTP/1.1\r\nHost: svc.test\r\nContent-Length: 5\r\n\r", "\nhello"], piecewise: true,
        ["HTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\nok"], simple: true),
      ScriptedExchange(
        requestPieces: ["POST /split/3 HTTP/1.1\r\n", "Host: svc.test\r\nContent-Length: 11\r\n", "\r\nhello", " world"],
        piecewise: true, [ok5 + "three"], simple: true),
      ScriptedExchange(
        requestPieces: ["GET /split/4 HTTP/1.1\r\nHost: svc.test\r\n", "X_Odd: 1\r\n\r\n"], piecewise: true, [ok5 + "odd!!"],
        simple: false),
      ScriptedExchange(
        requestPieces: ["GET /split/5 HTTP/1.1\r\nX-A: \(String(repeating: "a", count: 1500))",
                        "\(String(repeating: "b", count: 1000))\r\n\r\n"], piecewise: true, [ok5 + "long!"], simple: false),
      // Rarer methods: WebDAV's with a body, a cache's, one of four letters that is not HEAD (its
      // answer has a body), and one with a `-` (the Swift parser's alone).
      ScriptedExchange(
        "PROPFIND /dav/ HTTP/1.1\r\nHost: svc.test\r\nDepth: 1\r\nContent-Length: 4\r\n\r\n<a/>",
        "HTTP/1.1 207 Multi-Status\r\nContent-Length: 5\r\n\r\n<m/>\n", simple: true),
      ScriptedExchange("PURGE /cache/a HTTP/1.1\r\nHost: svc.test\r\n\r\n", ok5 + "purge", simple: true),
      ScriptedExchange("HOLD /h HTTP/1.1\r\nHost: svc.test\r\n\r\n", ok5 + "holds", simple: true),
      ScriptedExchange("M-SEARCH /m HTTP/1.1\r\nHost: svc.test\r\n\r\n", ok5 + "seek!", simple: false),
      ScriptedExchange(
        "GET /chunked/split HTTP/1.1\r\nHost: svc.test\r\n\r\n",
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nX-Trace: 1\r\n\r\n5\r\nhel", "lo\r\n1", "A;ext=1\r\n",
        String(repeating: "c", count: 26) + "\r\n0\r\nServer-Timing: db;dur=1\r", "\n\r\n", simple: true),
      ScriptedExchange(
        requestPieces: ["PUT /upload HTTP/1.1\r\nHost: svc.test\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nab", "cd\r\n",
                        "3;part=2\r\nefg\r\n0\r\n\r\n"],
        ["HTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\nok"], simple: true),
      ScriptedExchange("GET /ab?n=1 HTTP/1.0\r\nConnection: Keep-Alive\r\nHost: svc.test\r\nUser-Agent: ApacheBench/2.3\r\n\r\n",
                       "HTTP/1.1 200 OK\r\nConnection: keep-alive\r\nContent-Length: 2\r\n\r\nab", simple: true),
      ScriptedExchange("GET /last HTTP/1.1\r\nHost: svc.test\r\n\r\n",
                       "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 3\r\n\r\nbye", simple: true),
      ScriptedExchange("GET /tail HTTP/1.1\r\nHost: svc.test\r\n\r\n",
                       "HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\n", "up to ", "the close", simple: true),
    ]
  }()

  /// Runs the script on a new connection of this process to itself, both ends monitored: each
  /// step on the worker `turns` names (client write, server read, server write, client read).
  /// Returns the client's and the server's http records, in order, and their replays.
  private static func run(
    _ script: [ScriptedExchange], workers: [Worker], turns: (Int, Int, Int, Int)
  ) throws -> (client: [HTTPRecord], server: [HTTPRecord], replays: (UInt64, UInt64), responding: (Bool, Bool)) {
    let (listener, port) = InProcessServer.listen()
    defer { close(listener) }
    let ((clientPort, replays, responding), records) = try SharedMonitor.records {
      () throws -> (UInt16, (UInt64, UInt64), (Bool, Bool)) in
      let client = try Sockets.connect(port)
      let server = accept(listener, nil, nil)
      try #require(server >= 0)
      var local = Sockets.address(0)
      var length = socklen_t(MemoryLayout<sockaddr_in>.size)
      _ = withUnsafeMutablePointer(to: &local) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(client, $0, &length) }
      }
      for exchange in script {
        // The request's first piece and the interim answers to it, when it has some.
        let head = exchange.interims.isEmpty ? [] : [exchange.requestPieces[0]]
        if let first = head.first {
          workers[turns.0].run { _ = try? Sockets.sendAll(client, first) }
          workers[turns.1].run { Self.read(server, exactly: first.utf8.count) }
          workers[turns.2].run {
            for piece in exchange.interims { _ = try? Sockets.sendAll(server, piece) }
          }
          workers[turns.3].run {
            Self.read(client, exactly: exchange.interims.joined().utf8.count)
            usleep(Self.interimPause)
          }
        }
        let rest = exchange.requestPieces.dropFirst(head.count)
        let writes = exchange.piecewise ? rest.map({ [$0] }) : [Array(rest)]
        for (number, piece) in writes.enumerated() {
          workers[turns.0].run {
            if exchange.piecewise && number > 0 { usleep(Self.interimPause) }
            for part in piece { _ = try? Sockets.sendAll(client, part) }
          }
          workers[turns.1].run { Self.read(server, exactly: piece.joined().utf8.count) }
        }
        workers[turns.2].run {
          for piece in exchange.responsePieces { _ = try? Sockets.sendAll(server, piece) }
        }
        workers[turns.3].run { Self.read(client, exactly: exchange.responseLength - exchange.interims.joined().utf8.count) }
      }
      let replays = (ExchangeReplayTests.replays(client), ExchangeReplayTests.replays(server))
      let responding = (Self.responding(client), Self.responding(server))
      close(client)
      close(server)
      return (UInt16(bigEndian: local.sin_port), replays, responding)
    }
    func exchanges(peerPort: UInt16) throws -> [HTTPRecord] {
      let connection = try #require(records.connections.first { $0.peerPort == peerPort })
      return records.http.filter { $0.connectionId == connection.id }.sorted { $0.startUnixNs < $1.startUnixNs }
    }
    return (try exchanges(peerPort: port), try exchanges(peerPort: clientPort), replays, responding)
  }

  static let interim = "HTTP/1.1 100 Continue\r\n\r\n"
  /// How long a client waits after an interim answer before it sends its body (µs).
  static let interimPause: useconds_t = 30_000

  /// Whether the hooks are taking a response on `fd` (its last bytes, until the close).
  private static func responding(_ fd: Int32) -> Bool {
    guard let slot = ConnectionTable.tracked(fd) else { return false }
    return cnm_load_u64(slot.pointer(to: \.head.replay_state)!) & UInt64(CNM_REPLAY_PHASE) == UInt64(CNM_REPLAY_RESPONDING)
  }

  /// Reads `count` bytes, in as many calls as they take.
  private static func read(_ fd: Int32, exactly count: Int) {
    var buffer = [UInt8](repeating: 0, count: 65536)
    var left = count
    while left > 0 {
      let got = Glibc.read(fd, &buffer, Swift.min(buffer.count, left))
      if got <= 0 { return }
      left -= got
    }
  }

  /// What the two paths must agree on: every field but the connection's id, port and the times,
  /// its setup times too (the two runs are two connections: a lookup another suite makes at the
  /// same moment can be joined to one of them).
  private static func comparable(_ record: HTTPRecord) -> HTTPRecord {
    var record = record
    record.startUnixNs = 0
    record.durationMs = 0
    record.ttfbMs = record.ttfbMs == nil ? nil : 0
    record.connectionId = 0
    record.peerPort = 0
    record.dnsMs = nil
    record.connectMs = nil
    record.tlsMs = nil
    return record
  }

  @Test("exchanges that all differ, client and server: the hooks' records are the Swift path's, field for field")
  func hooksRecordWhatSwiftRecords() throws {
    _ = SharedMonitor.sink
    let workers = [Worker(), Worker()]
    // Each side's two directions on two threads: the replay is never armed, Swift records all.
    let swift = try Self.run(Self.script, workers: workers, turns: (0, 1, 0, 1))
    #expect(swift.replays == (0, 0))
    // One thread: from exchange 2 on, the hooks take every simple exchange, and record it but
    // the last, whose answer runs to the close: Swift records that one at the close, from what
    // they took of it (its replays are counted before the close).
    let hooks = try Self.run(Self.script, workers: workers, turns: (0, 0, 0, 0))
    let simple = UInt64(Self.script.filter(\.simple).count)
    #expect(hooks.replays == (simple - 1, simple - 1) && hooks.responding == (true, true))
    for (role, swiftRecords, hookRecords) in [("client", swift.client, hooks.client), ("server", swift.server, hooks.server)] {
      try #require(swiftRecords.count == Self.script.count, "\(role)")
      try #require(hookRecords.count == Self.script.count, "\(role)")
      for (index, (expected, recorded)) in zip(swiftRecords, hookRecords).enumerated() {
        #expect(Self.comparable(recorded) == Self.comparable(expected), "\(role) exchange \(index)")
      }
    }
    // And the Swift path's records are what was sent (a target, its first 512 bytes).
    #expect(swift.server.map(\.target) == Self.script.map { String($0.request.split(separator: " ")[1].prefix(512)) })
    #expect(swift.server.map(\.requestBytes) == Self.script.map { UInt64($0.request.utf8.count) })
    #expect(swift.server.map(\.responseBytes) == Self.script.map { UInt64($0.responseLength) })
    #expect(swift.server[2].host == "svc.test" && swift.server[4].host == nil && swift.server[7].host == "other.test:8080")
    #expect(
      swift.client.map(\.status) == [
        200, 404, 200, 500, 200, 201, 200, 200, 200, 200, 200, 204, 200, 200, 200, 200, 304, 200, 200, 200, 200, 200, 201, 200,
        200, 200, 200, 201, 200, 200, 200, 207, 200, 200, 200, 200, 201, 200, 200, 200,
      ])
    #expect(swift.server.map(\.httpProtocol).filter { $0 == .http10 }.count == 1)
    #expect(
      swift.server.map(\.method).filter { $0 != "GET" } == [
        "POST", "HEAD", "PUT", "POST", "PUT", "PUT", "POST", "DELETE", "PUT", "POST", "PROPFIND", "PURGE", "HOLD", "M-SEARCH",
        "PUT",
      ])
    // A head in pieces begins with its first: its exchange lasts at least the pauses between them.
    for (index, exchange) in Self.script.enumerated() where exchange.piecewise {
      for record in [swift.client[index], swift.server[index], hooks.client[index], hooks.server[index]] {
        let pauses = Double(Self.interimPause) / 1000 * Double(exchange.requestPieces.count - 1)
        #expect(record.durationMs > pauses * 0.9, "exchange \(index): \(record)")
      }
    }
    // An exchange with an interim answer: its first byte is the interim's, before the client's
    // pause, on either path.
    for (index, exchange) in Self.script.enumerated() where !exchange.interims.isEmpty {
      for record in [swift.client[index], swift.server[index], hooks.client[index], hooks.server[index]] {
        let pause = Double(Self.interimPause) / 1000
        #expect(record.ttfbMs! < record.durationMs - pause * 2 / 3, "exchange \(index): \(record)")
      }
    }
  }

  @Test("nginx serving varied requests over HTTP and HTTPS while monitored, heads over 1 KiB among them: each record is what curl sent and got")
  func nginxOverTLSAndPlain() throws {
    let (elfhook, _) = try InjectionTests.products()
    let scratch = try TemporaryDirectory("injection")
    defer { scratch.remove() }
    let tls = try LoopbackServer.makeCertificate(in: scratch.url)
    let output = scratch.file("nginx.jsonl")
    let files = Dictionary(uniqueKeysWithValues: (0..<12).map { ("v\($0).bin", 300 + $0 * 700) })
    let server = try LoopbackNginx(files: files, tls: tls, launcher: [elfhook, "run", "--output", output.path, "--"])
    // One curl a scheme, 30 keep-alive requests: each another file, query and header (a config
    // file's options are its URL's own: each has them all).
    var sent: [String: [(target: String, status: Int, request: UInt64, response: UInt64)]] = [:]
    for (scheme, port) in [("http", server.port), ("https", server.tlsPort)] {
      let targets = (0..<30).map { "/v\($0 * 5 % 12).bin?page=\($0)&sort=\(String(repeating: "a", count: $0))" }
      // Every third request carries a cookie that makes its head over 1 KiB, which nginx reads
      // in two calls (its first buffer is 1 KiB).
      let config = targets.enumerated().map { index, target in
        "url = \"\(scheme)://localhost:\(port)\(target)\"\nheader = \"X-Request-Id: r-\(index * 7919)\"\n"
          + (index % 3 == 0 ? "header = \"Cookie: session=\(String(repeating: "c", count: 1000 + index))\"\n" : "")
          + "http1.1\ncacert = \"\(tls.certificate)\"\noutput = \"/dev/null\"\nwrite-out = \"%{response_code} %{size_request} %{size_header} %{size_download}\\\\n\"\n"
      }.joined(separator: "next\n")
      let file = scratch.file("\(scheme).curl")
      try config.write(to: file, atomically: true, encoding: .utf8)
      let curl = try ProgramRun.run([
        "/usr/bin/curl", "-s", "-f", "-K", file.path,
      ])
      try #require(curl.status == 0, "\(curl.stderr)")
      let lines = String(decoding: curl.stdout, as: UTF8.self).split(separator: "\n").map { $0.split(separator: " ").compactMap { UInt64($0) } }
      try #require(lines.count == targets.count && lines.allSatisfy { $0.count == 4 }, "\(curl.stdout)")
      sent[scheme] = zip(targets, lines).map { ($0, Int($1[0]), $1[1], $1[2] + $1[3]) }
    }
    let deadline = Date().addingTimeInterval(10)
    while Date() < deadline, Self.serverRecords((try? InjectionTests.records(in: output)) ?? []).count < 60 {
      usleep(50_000)  // the records come as nginx's connections close
    }
    server.stop()
    let records = Self.serverRecords(try InjectionTests.records(in: output))
    for (scheme, expected) in sent {
      let exchanges = records.filter { $0.scheme.rawValue == scheme }.sorted { $0.startUnixNs < $1.startUnixNs }
      try #require(exchanges.count == expected.count, "\(scheme): \(exchanges.count) records")
      #expect(exchanges.map(\.target) == expected.map(\.target), "\(scheme)")
      #expect(exchanges.map(\.status) == expected.map(\.status), "\(scheme)")
      #expect(exchanges.map(\.requestBytes) == expected.map(\.request), "\(scheme)")
      #expect(exchanges.map(\.responseBytes) == expected.map(\.response), "\(scheme)")
      #expect(exchanges.map(\.reusedConnection) == [false] + Array(repeating: true, count: expected.count - 1))
      #expect(exchanges.allSatisfy { $0.method == "GET" && $0.httpProtocol == .http11 && $0.responseComplete == true })
      #expect(exchanges.allSatisfy { $0.host?.hasPrefix("localhost:") == true && $0.ttfbMs != nil })
      #expect(exchanges.allSatisfy { (scheme == "https") == ($0.tlsVersion != nil) }, "\(scheme)")
    }
  }

  private static func serverRecords(_ records: [Transaction]) -> [HTTPRecord] {
    records.compactMap { record -> HTTPRecord? in
      guard case .http(let http) = record, http.role == .server else { return nil }
      return http
    }
  }
}

