import Testing
import TestSupport

@testable import NetMonitor

/// Whatever the bytes, the parser never traps, never grows, and gives up on what is not HTTP/1.x.
@Suite("HTTP garbage")
struct HTTPGarbageTests {
  static func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

  static func parse(_ bytes: [UInt8], _ kind: HTTPDirectionKind) -> HTTPRun {
    var run = HTTPRun(kind)
    run.feed(ArraySlice(bytes))
    return run
  }

  @Test("a TLS ClientHello is given up at its first byte", arguments: [HTTPDirectionKind.requests, .responses])
  func tlsClientHello(kind: HTTPDirectionKind) {
    let hello: [UInt8] = [0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xFC, 0x03, 0x03] + Array(repeating: 0x41, count: 64)
    let run = Self.parse(hello, kind)
    #expect(run.events == [.gaveUp])
    #expect(run.parser.hasGivenUp)
  }

  @Test(
    "other protocols are given up within their first bytes",
    arguments: [
      "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",  // HTTP/2 prior knowledge
      "GET /\r\n",  // HTTP/0.9
      "GET  / HTTP/1.1\r\n\r\n",  // two spaces
      "get / HTTP/1.1\r\n\r\n",  // methods are upper case
      "*3\r\n$3\r\nSET\r\n",  // Redis
      "SSH-2.0-OpenSSH_9.2\r\n",
      "GET / HTTP/1.1\rHost: a\r\n\r\n",  // bare CR
      "GET / HTTP/1.1\r\nHost : a\r\n\r\n",  // space before colon
      "GET / HTTP/1.1\r\nno colon\r\n\r\n",
      "GET / HTTP/1.1\r\nX: a\u{0}b\r\n\r\n",  // NUL in a value
      "VERYLONGMETHODNAMEX / HTTP/1.1\r\n\r\n",
    ])
  func otherProtocols(text: String) {
    let run = Self.parse(Self.bytes(text), .requests)
    #expect(run.events.last == .gaveUp && run.events.filter { $0 == .gaveUp }.count == 1)
    #expect(!run.events.contains(.head))
  }

  @Test(
    "malformed status lines are given up",
    arguments: [
      "HTTP/2 200\r\n\r\n", "HTTP/1.1 20\r\n\r\n", "HTTP/1.1 2000 OK\r\n\r\n", "HTTP/1.1 099 X\r\n\r\n",
      "HTTP/1.1  200 OK\r\n\r\n", "HTTX/1.1 200 OK\r\n\r\n", "\u{0}\u{0}\u{0}\u{4}",
    ])
  func badStatusLines(text: String) {
    let run = Self.parse(Self.bytes(text), .responses)
    #expect(run.events.last == .gaveUp && !run.events.contains(.head))
  }

  @Test(
    "bad Content-Length values are given up",
    arguments: [
      "-1", "+5", "0x10", "1e3", "", " ", "5 5", "5,6", "5,", "99999999999999999999999",
      "4611686018427387905",  // 2^62 + 1
    ])
  func badContentLength(value: String) {
    for kind in [HTTPDirectionKind.requests, .responses] {
      let start = kind == .requests ? "POST / HTTP/1.1" : "HTTP/1.1 200 OK"
      let run = Self.parse(Self.bytes("\(start)\r\nContent-Length: \(value)\r\n\r\nbody"), kind)
      #expect(run.events == [.started, .gaveUp], "\(kind) \(value)")
    }
  }

  @Test("conflicting Content-Length headers are given up")
  func conflictingContentLength() {
    let run = Self.parse(Self.bytes("POST / HTTP/1.1\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\n"), .requests)
    #expect(run.events == [.started, .gaveUp])
  }

  @Test(
    "bad chunk framing is given up",
    arguments: [
      "xyz\r\n", "\r\n", ";ext\r\n", "-1\r\n", "1 2\r\n", "10000000000000000\r\n",
      "3\r\nabcd\r\n",  // data longer than its size
      "3\r\nabc\r\n0\r\n\u{1}\r\n\r\n",  // control byte in a trailer
      "3\r\nabc\rx",
    ])
  func badChunks(body: String) {
    let head = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
    let run = Self.parse(Self.bytes(head + body), .responses)
    #expect(run.events == [.started, .head, .gaveUp], "\(body.debugDescription)")
  }

  @Test("the largest chunk size is accepted and consumed in bulk")
  func hugeChunk() {
    var run = HTTPRun(.responses)
    run.feed("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nFFFFFFFFFFFFFFF\r\n")
    run.feed(ArraySlice(repeating: 0x61, count: 1 << 16))
    #expect(run.events == [.started, .head] && !run.parser.hasGivenUp)
  }

  @Test("an endless header line is given up at the head limit; the state never grows")
  func endlessHeaderLine() {
    var run = HTTPRun(.requests)
    run.feed("GET / HTTP/1.1\r\nX-Big: ")
    let block = [UInt8](repeating: 0x61, count: 64 * 1024)
    var fed = 0
    while !run.parser.hasGivenUp && fed < 4 * 1024 * 1024 {
      run.feed(ArraySlice(block))
      fed += block.count
    }
    #expect(run.events == [.started, .gaveUp])
    #expect(fed <= Int(HTTPStreamParser.maxHeadBytes) + block.count)
    #expect(MemoryLayout<HTTPStreamParser>.size <= 1408)
  }

  @Test(
    "an endless target, header name or reason phrase is given up at the head limit",
    arguments: [("GET /", HTTPDirectionKind.requests), ("GET / HTTP/1.1\r\nX-", .requests), ("HTTP/1.1 200 ", .responses)])
  func endlessRuns(prefix: String, kind: HTTPDirectionKind) {
    var run = HTTPRun(kind)
    run.feed(prefix)
    let block = [UInt8](repeating: 0x61, count: 10_000)
    var fed = 0
    while !run.parser.hasGivenUp && fed < 1024 * 1024 {
      run.feed(ArraySlice(block))
      fed += block.count
    }
    #expect(run.events == [.started, .gaveUp])
    #expect(fed <= Int(HTTPStreamParser.maxHeadBytes) + block.count)
  }

  @Test("endless headers and endless trailers are given up too")
  func endlessHeaders() {
    var run = HTTPRun(.requests)
    run.feed("GET / HTTP/1.1\r\n")
    for _ in 0..<50_000 { run.feed("X-A: b\r\n") }
    #expect(run.events == [.started, .gaveUp])
    var chunked = HTTPRun(.responses)
    chunked.feed("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n")
    for _ in 0..<50_000 { chunked.feed("T: b\r\n") }
    #expect(chunked.events == [.started, .head, .gaveUp])
  }

  @Test("after giving up, nothing more is reported")
  func silentAfterGivingUp() {
    var run = HTTPRun(.requests)
    run.feed("\u{16}\u{03}")
    run.feed("GET / HTTP/1.1\r\n\r\n")
    run.finish()
    #expect(run.events == [.gaveUp])
  }

  @Test("random bytes: no trap, and given up", arguments: [HTTPDirectionKind.requests, .responses])
  func randomBytes(kind: HTTPDirectionKind) {
    var random = SplitMix64(state: 7)
    for _ in 0..<2000 {
      let count = Int.random(in: 1...512, using: &random)
      let bytes = (0..<count).map { _ in UInt8.random(in: 0...255, using: &random) }
      var run = HTTPRun(kind)
      run.feed(bytes, cuts: [Int.random(in: 0...count, using: &random)])
      run.finish()
      #expect(run.events.filter { $0 == .gaveUp }.count <= 1)
      #expect(!run.events.contains(.head))
    }
  }

  @Test("mutated valid streams: no trap, byte counts never exceed the stream", arguments: [HTTPDirectionKind.requests, .responses])
  func mutatedStreams(kind: HTTPDirectionKind) {
    let original = kind == .requests ? HTTPFragmentationTests.requestStream : HTTPFragmentationTests.responseStream
    var random = SplitMix64(state: 99)
    for _ in 0..<3000 {
      var bytes = original
      for _ in 0..<Int.random(in: 1...4, using: &random) {
        let position = Int.random(in: 0..<bytes.count, using: &random)
        switch Int.random(in: 0..<3, using: &random) {
        case 0: bytes[position] = UInt8.random(in: 0...255, using: &random)
        case 1: bytes.remove(at: position)
        default: bytes.insert(UInt8.random(in: 0...255, using: &random), at: position)
        }
      }
      var run = HTTPRun(kind, expecting: [.head, .connect, .ordinary])
      let cuts = (0..<3).map { _ in Int.random(in: 0...bytes.count, using: &random) }.sorted()
      run.feed(bytes, cuts: cuts)
      run.finish()
      #expect(total(run.events) <= UInt64(bytes.count))
      #expect(run.events.filter { $0 == .gaveUp }.count <= 1)
    }
  }
}
