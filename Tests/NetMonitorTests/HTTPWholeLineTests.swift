import Testing
import TestSupport

@testable import NetMonitor

/// Lines that arrive whole take the fast path (`scanLines`); lines cut by the end of a buffer, and
/// anything unusual, go byte by byte through `scan`. Both must decide exactly alike: same events, same
/// byte counts, same heads, wherever the stream is cut.
@Suite("HTTP whole lines and cut lines")
struct HTTPWholeLineTests {
  /// What wrk sends, twice (pipelined).
  static let wrkRequests = Array(
    String(repeating: "GET /1k.bin HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n\r\n", count: 2).utf8)

  /// What nginx answers for a 1 KiB file, twice.
  static let nginxResponses: [UInt8] = {
    let head =
      "HTTP/1.1 200 OK\r\nServer: nginx/1.24.0 (Ubuntu)\r\nDate: Mon, 27 Jul 2009 12:28:53 GMT\r\n"
      + "Content-Type: application/octet-stream\r\nContent-Length: 1024\r\n"
      + "Last-Modified: Mon, 27 Jul 2009 12:00:00 GMT\r\nConnection: keep-alive\r\n"
      + "ETag: \"4a6d9b40-400\"\r\nAccept-Ranges: bytes\r\n\r\n"
    let message = Array(head.utf8) + [UInt8](repeating: 0x62, count: 1024)
    return message + message
  }()

  /// Valid heads that leave the common path somewhere: bare LF, obsolete folding, tabs, names in any
  /// case or with uncommon token bytes, names of the lengths that matter but other bytes, names longer
  /// than the scratch, Host trimming and truncation, lists with parameters, long targets.
  static let unusualRequests = Array(
    ("GET /a HTTP/1.1\nhOsT:\t x.example:81 \t\nX_Under.score~1: v\n\n"
      + "POST /b?q=1 HTTP/1.0\r\nHosp: no\r\nConnectiom: close\r\nContent-Lengtx: 7\r\n"
      + "Transfer-Encodinh: chunked\r\nContent-Length: 3 , 3\r\nConnection: Keep-Alive ;x=1, foo,CLOSE\r\n"
      + "X-A-Very-Long-Header-Name-Beyond-The-TemporaryDirectory: 1\r\nX-Folded: a\r\n \t b\r\n\r\nabc"
      + "PUT /c HTTP/1.1\r\nHost:\r\nHOST:  second  \r\nTRANSFER-ENCODING: gzip, Chunked\r\n\r\n0\r\n\r\n"
      + "GET /\(String(repeating: "t", count: 600)) HTTP/1.1\r\n"
      + "Host: \(String(repeating: "h", count: 300))\r\n"
      + "Connection: upgrade\r\nUpgrade: websocket\r\n\r\n").utf8)

  static let unusualResponses = Array(
    ("HTTP/1.1 100 Continue\r\n\r\n"
      + "HTTP/1.1 200\r\nContent-Length: 2\r\n\r\nok"
      + "HTTP/1.0 404 \r\nContent-Length:5\r\n\r\nnope!"
      + "HTTP/1.1 200 Fine\tthanks \u{80}\r\ntransfer-encoding: chunked\nX: y\r\n\r\n3\r\nabc\r\n0\r\n\r\n"
      + "HTTP/1.1 301 Moved\r\nLocation: /x\r\nContent-Length: 0\r\n\r\n"
      + "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nuntil the end").utf8)

  /// Events and heads of `bytes` fed in pieces cut at `cuts`.
  static func parse(
    _ kind: HTTPDirectionKind, _ bytes: [UInt8], cuts: [Int]
  ) -> (events: [SeenEvent], heads: [HeadSummary]) {
    var run = HTTPRun(kind, expecting: kind == .responses ? [.ordinary, .ordinary, .ordinary] : [])
    run.feed(bytes, cuts: cuts)
    run.finish()
    return (run.events, run.summaries)
  }

  static let streams: [(HTTPDirectionKind, [UInt8])] = [
    (.requests, wrkRequests), (.responses, nginxResponses), (.requests, unusualRequests),
    (.responses, unusualResponses),
  ]

  @Test("the streams parse: every message complete, nothing given up")
  func references() {
    for (kind, bytes) in Self.streams {
      let (events, heads) = Self.parse(kind, bytes, cuts: [])
      #expect(!events.contains(.gaveUp), "\(kind) \(events)")
      #expect(total(events) == UInt64(bytes.count))
      #expect(heads.count == events.filter { $0 == .head }.count && !heads.isEmpty)
    }
    let requests = Self.parse(.requests, Self.unusualRequests, cuts: []).heads
    #expect(requests.map(\.host) == ["x.example:81", nil, "second", String(repeating: "h", count: 256)])
    // flags: target and host truncated, Transfer-Encoding, chunked, close, keep-alive, upgrade
    #expect(requests[1].contentLength == 3)
    #expect(requests[1].flags == [false, false, false, false, true, true, false])
    #expect(requests[2].flags == [false, false, true, true, false, false, false])
    #expect(requests[3].flags == [true, true, false, false, false, false, true])
    let nginx = Self.parse(.responses, Self.nginxResponses, cuts: []).heads
    #expect(nginx.allSatisfy { $0.status == 200 && $0.contentLength == 1024 && $0.flags[5] })
  }

  @Test("one byte at a time gives the same events and heads as one piece", arguments: 0..<4)
  func byteAtATime(stream: Int) {
    let (kind, bytes) = Self.streams[stream]
    let whole = Self.parse(kind, bytes, cuts: [])
    let bytewise = Self.parse(kind, bytes, cuts: Array(1..<bytes.count))
    #expect(bytewise.events == whole.events)
    #expect(bytewise.heads == whole.heads)
  }

  @Test("a cut at every position, and at every pair of positions in the first 300 bytes", arguments: 0..<4)
  func everyCut(stream: Int) {
    let (kind, bytes) = Self.streams[stream]
    let whole = Self.parse(kind, bytes, cuts: [])
    for cut in 0...bytes.count {
      let run = Self.parse(kind, bytes, cuts: [cut])
      #expect(run.events == whole.events && run.heads == whole.heads, "cut at \(cut)")
    }
    let pairsEnd = min(bytes.count, 300)  // the whole nginx head
    for first in 1..<pairsEnd {
      for second in first..<pairsEnd {
        let run = Self.parse(kind, bytes, cuts: [first, second])
        if run.events != whole.events || run.heads != whole.heads {
          Issue.record("cuts at \(first) and \(second): \(run.events) \(run.heads)")
          return
        }
      }
    }
  }

  @Test("mutated streams: whole, cut and byte by byte agree, including where they give up", arguments: 0..<4)
  func mutatedStreams(stream: Int) {
    let (kind, original) = Self.streams[stream]
    var random = SplitMix64(state: 1234 + UInt64(stream))
    for _ in 0..<1500 {
      var bytes = original
      for _ in 0..<Int.random(in: 1...3, using: &random) {
        let position = Int.random(in: 0..<bytes.count, using: &random)
        // Bytes that matter to the parser, often; any byte sometimes.
        let interesting: [UInt8] = [0x0D, 0x0A, 0x20, 0x09, 0x3A, 0x2C, 0x3B, 0x00, 0x7F, 0x80, 0x30, 0x5F, 0x41]
        let byte = Bool.random(using: &random)
          ? interesting.randomElement(using: &random)! : UInt8.random(in: 0...255, using: &random)
        switch Int.random(in: 0..<3, using: &random) {
        case 0: bytes[position] = byte
        case 1: bytes.remove(at: position)
        default: bytes.insert(byte, at: position)
        }
      }
      let whole = Self.parse(kind, bytes, cuts: [])
      let bytewise = Self.parse(kind, bytes, cuts: Array(1..<bytes.count))
      let cuts = (0..<3).map { _ in Int.random(in: 0...bytes.count, using: &random) }.sorted()
      let cut = Self.parse(kind, bytes, cuts: cuts)
      guard bytewise.events == whole.events, bytewise.heads == whole.heads, cut.events == whole.events,
        cut.heads == whole.heads
      else {
        let text = String(decoding: bytes, as: UTF8.self).debugDescription
        Issue.record("\(text): whole \(whole), byte by byte \(bytewise), cut at \(cuts) \(cut)")
        return
      }
    }
  }

  @Test("a head of exactly the limit is accepted, one byte more is given up, whole or in pieces")
  func headLimit() {
    let start = Array("GET / HTTP/1.1\r\n".utf8)
    let line = Array("X-Filler: \(String(repeating: "f", count: 1000))\r\n".utf8)
    var head = start
    while head.count + line.count + 7 <= Int(HTTPStreamParser.maxHeadBytes) { head += line }
    let last = String(repeating: "g", count: Int(HTTPStreamParser.maxHeadBytes) - head.count - 7)
    head += Array("X: \(last)\r\n\r\n".utf8)
    #expect(head.count == Int(HTTPStreamParser.maxHeadBytes))
    var longer = head
    longer.insert(0x67, at: head.count - 4)
    for piece in [head.count, 4096, 1000, 7] {
      let cuts = Array(stride(from: piece, to: head.count, by: piece))
      let accepted = Self.parse(.requests, head, cuts: cuts).events
      #expect(accepted == [.started, .head, .complete(UInt64(head.count))])
      #expect(Self.parse(.requests, longer, cuts: cuts).events == [.started, .gaveUp])
    }
  }
}

/// The word-at-a-time scans agree with byte-by-byte definitions, at every offset and length.
@Suite("HTTP byte scans")
struct HTTPByteScanTests {
  static func randomBuffers(_ count: Int) -> [[UInt8]] {
    var random = SplitMix64(state: 5)
    let alphabet = Array("aZ09-_.:;, \t\r\n\"(/".utf8) + [0x00, 0x1F, 0x21, 0x7E, 0x7F, 0x80, 0xA0, 0xFF]
    return (0..<count).map { _ in
      (0..<Int.random(in: 0...40, using: &random)).map { _ in
        Int.random(in: 0..<4, using: &random) == 0
          ? alphabet.randomElement(using: &random)!
          : UInt8(ascii: "a") + UInt8.random(in: 0..<26, using: &random)
      }
    }
  }

  @Test("fieldTextEnd, targetEnd and commonTokenEnd")
  func scans() {
    for bytes in Self.randomBuffers(3000) {
      bytes.withUnsafeBytes { raw in
        let base = raw.baseAddress ?? UnsafeRawPointer(bitPattern: 8)!
        for start in 0...raw.count {
          let fieldText = raw[start...].firstIndex { !HTTPByteClass.isFieldText($0) } ?? raw.count
          #expect(HTTPByteClass.fieldTextEnd(base, from: start, count: raw.count) == fieldText)
          let target = raw[start...].firstIndex { !HTTPByteClass.isTarget($0) } ?? raw.count
          #expect(HTTPByteClass.targetEnd(base, from: start, count: raw.count) == target)
          // The first byte other than a letter, digit or `-`.
          let isCommon: (UInt8) -> Bool = { byte in
            (byte | 0x20 >= 0x61 && byte | 0x20 <= 0x7A) || (byte >= 0x30 && byte <= 0x39) || byte == 0x2D
          }
          let firstOther = raw[start...].firstIndex { !isCommon($0) } ?? raw.count
          #expect(HTTPByteClass.commonTokenEnd(base, from: start, count: raw.count) == firstOther)
        }
      }
    }
  }

  @Test("tokenEquals matches names in any case, and nothing else")
  func tokenEquals() {
    let literals: [StaticString] = [
      "host", "close", "chunked", "keep-alive", "content-length", "transfer-encoding",
    ]
    for literal in literals {
      let expected = Array(literal.description.utf8)
      var random = SplitMix64(state: UInt64(expected.count))
      for _ in 0..<2000 {
        // Some letters upper case, and sometimes one byte another token byte.
        var bytes = expected.map { $0 >= 0x61 && Bool.random(using: &random) ? $0 - 0x20 : $0 }
        if Bool.random(using: &random) {
          let tokenBytes = Array("!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ".utf8)
          bytes[Int.random(in: 0..<bytes.count, using: &random)] = tokenBytes.randomElement(using: &random)!
        }
        let same = zip(bytes, expected).allSatisfy { byte, letter in
          byte == letter || (letter >= 0x61 && byte == letter - 0x20)
        }
        #expect(bytes.withUnsafeBytes { HTTPByteClass.tokenEquals($0.baseAddress!, literal) } == same)
      }
    }
  }
}
