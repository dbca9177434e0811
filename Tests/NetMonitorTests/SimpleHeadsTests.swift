import CNetMonitor
import Testing

@testable import NetMonitor

/// The hooks' parsers of simple heads (`cnm_parse_simple_request`, `cnm_parse_simple_response`,
/// simple_heads.c) record exchanges without the Swift parser: whatever they accept, the Swift
/// parser must read to the same fields. Checked on heads that should pass, heads that must not,
/// and ~40,000 random mutations of both, each accepted one parsed again by ``HTTPStreamParser``.
@Suite("Simple heads the hooks read")
struct SimpleHeadsTests {
  static let requests = [
    "GET / HTTP/1.1\r\nHost: svc.test\r\n\r\n",
    "GET /c/d.bin?x=1&next=http://z/w HTTP/1.1\r\nHost:   svc.test:8080 \t\r\nAccept: */*\r\nConnection: Keep-Alive\r\n\r\n",
    "GET http://svc.test/e HTTP/1.1\r\nUser-Agent: wrk\t2\r\nX-Request-Id: 42\r\n\r\n",
    // Python's urllib.request.urlopen
    "GET /f.bin HTTP/1.1\r\nAccept-Encoding: identity\r\nHost: 127.0.0.1:8000\r\nUser-Agent: Python-urllib/3.11\r\nConnection: close\r\n\r\n",
    // Bodies framed by their Content-Length (curl -d, an API client), and the other methods
    "POST /api/items HTTP/1.1\r\nHost: svc.test\r\nUser-Agent: curl/7.88.1\r\nAccept: */*\r\nContent-Length: 13\r\nContent-Type: application/json\r\n\r\n{\"a\":1,\"b\":2}",
    "PUT /v/1 HTTP/1.1\r\nHost: svc.test\r\ncontent-length:  5 \r\nConnection: keep-alive\r\n\r\nhel",
    "PATCH /v/1 HTTP/1.1\r\nHost: svc.test\r\nContent-Length: 0\r\n\r\n",
    "DELETE /v/1?force=1 HTTP/1.1\r\nHost: svc.test\r\n\r\n", "OPTIONS * HTTP/1.1\r\nHost: svc.test\r\n\r\n",
    "HEAD /f.bin HTTP/1.1\r\nHost: 127.0.0.1:8000\r\nUser-Agent: curl/7.88.1\r\nAccept: */*\r\n\r\n",
    // HTTP/1.0: ApacheBench (keep-alive asked), curl --http1.0
    "GET /index.html HTTP/1.0\r\nConnection: Keep-Alive\r\nHost: 127.0.0.1:8080\r\nUser-Agent: ApacheBench/2.3\r\nAccept: */*\r\n\r\n",
    "POST /api HTTP/1.0\r\nHost: h\r\nContent-Length: 2\r\n\r\n{}",
    // Chunked bodies: curl -T -, an SDK streaming its upload
    "PUT /up HTTP/1.1\r\nHost: h\r\nUser-Agent: curl/7.88.1\r\nTransfer-Encoding: chunked\r\nExpect:\r\n\r\n",
    "POST /v1/items HTTP/1.1\r\nhost: api.test\r\ntransfer-encoding:  Chunked\r\nContent-Type: application/json\r\n\r\n",
    // A browser's request as a proxy passes it on (~1,300 bytes: client hints, cookies, X-Forwarded-*)
    "GET /app/dashboard?tab=orders&page=3 HTTP/1.1\r\nHost: app.example.test\r\nConnection: keep-alive\r\n"
      + "sec-ch-ua: \"Chromium\";v=\"120\", \"Google Chrome\";v=\"120\", \"Not?A_Brand\";v=\"99\"\r\nsec-ch-ua-mobile: ?0\r\n"
      + "sec-ch-ua-platform: \"Linux\"\r\nUpgrade-Insecure-Requests: 1\r\n"
      + "User-Agent: Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36\r\n"
      + "Accept: text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,image/apng,*/*;q=0.8\r\n"
      + "Sec-Fetch-Site: same-origin\r\nSec-Fetch-Mode: navigate\r\nSec-Fetch-User: ?1\r\nSec-Fetch-Dest: document\r\n"
      + "Referer: https://app.example.test/app/dashboard?tab=orders&page=2\r\nAccept-Encoding: gzip, deflate, br\r\n"
      + "Accept-Language: en-US,en;q=0.9,de;q=0.8\r\nCookie: session=\(String(repeating: "3f9a", count: 40)); theme=dark; "
      + "_ga=GA1.1.1234567890.1700000000; consent=analytics%3Dtrue%26ads%3Dfalse\r\nX-Forwarded-For: 203.0.113.7\r\n"
      + "X-Forwarded-Proto: https\r\nX-Real-IP: 203.0.113.7\r\n\r\n",
    // Rarer methods: WebDAV's, a cache's, the longest the hooks read
    "PROPFIND /dav/ HTTP/1.1\r\nHost: dav.test\r\nDepth: 1\r\nContent-Type: application/xml\r\nContent-Length: 4\r\n\r\n<a/>",
    "PURGE /cache/a?v=2 HTTP/1.1\r\nHost: cache.test\r\n\r\n", "TRACE / HTTP/1.1\r\nHost: h\r\n\r\n",
    "ABCDEFGHIJKLMNO / HTTP/1.1\r\nHost: h\r\n\r\n",
    // The longest target a record holds whole
    "GET /\(String(repeating: "t", count: 511)) HTTP/1.1\r\nHost: h\r\n\r\n",
  ]
  static let responses = [
    "HTTP/1.1 200 OK\r\nServer: nginx\r\nContent-Type: text/plain\r\nContent-Length: 12\r\nConnection: keep-alive\r\n\r\n",
    "HTTP/1.1 404 Not Found\r\ncontent-length:0\r\n\r\n",
    "HTTP/1.1 500 \r\nETag: \"5f-3\"\r\nContent-Length:  7 \r\nAccept-Ranges: bytes\r\n\r\n",
    // Python's http.server (HTTP/1.0), and a server's answer to a last request
    "HTTP/1.0 200 OK\r\nServer: SimpleHTTP/0.6 Python/3.11.7\r\nDate: Sat, 28 Nov 2026 04:18:34 GMT\r\nContent-type: application/octet-stream\r\nContent-Length: 3000\r\nLast-Modified: Sat, 28 Nov 2026 04:18:00 GMT\r\n\r\n",
    "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nConnection: close\r\n\r\n",
    // A chunked body: a Python framework's, nginx's gzip or proxy's
    "HTTP/1.1 200 OK\r\nServer: nginx\r\nContent-Type: text/html\r\nTransfer-Encoding: chunked\r\nConnection: keep-alive\r\nContent-Encoding: gzip\r\n\r\n",
    "HTTP/1.0 200 OK\r\ntransfer-encoding:  Chunked \r\n\r\n",
  ]

  /// Heads whose bodies their status or request says (204, 304: none), or which have none to
  /// frame them (a body up to the close, which the replay leaves to Swift).
  static let bodilessResponses = [
    "HTTP/1.1 204 No Content\r\nDate: Sat, 28 Nov 2026 04:18:34 GMT\r\n\r\n",
    "HTTP/1.1 304 Not Modified\r\nETag: \"5f-3\"\r\nContent-Length: 5\r\n\r\n",
    "HTTP/1.0 200 OK\r\nServer: SimpleHTTP/0.6\r\n\r\n", "HTTP/1.1 200 OK\r\n\r\n",
  ]

  /// The request fields the hooks read from `text`, or nil when they refuse it.
  static func request(_ bytes: [UInt8]) -> cnm_simple_request? {
    var fields = cnm_simple_request()
    return cnm_parse_simple_request(bytes, bytes.count, &fields) ? fields : nil
  }

  static func response(_ bytes: [UInt8]) -> cnm_simple_response? {
    var fields = cnm_simple_response()
    return cnm_parse_simple_response(bytes, bytes.count, &fields) ? fields : nil
  }

  /// The hooks' last response head on a connection: what `cnm_read_simple_response` reads the
  /// next one after.
  struct LastResponse {
    var fields = cnm_simple_response()
    var bytes = [UInt8](repeating: 0, count: Int(CNM_SIMPLE_HEAD_CAPACITY))

    /// The fields read from `head` after the last head (nil when refused: then the last stays).
    mutating func read(_ head: [UInt8]) -> cnm_simple_response? {
      let before = self
      guard cnm_read_simple_response(head, head.count, &fields, &bytes) else {
        #expect(Self.same(fields, before.fields) && bytes == before.bytes, "a refused head changed the last")
        return nil
      }
      #expect(bytes.prefix(Int(fields.length)) == head.prefix(Int(fields.length)))
      return fields
    }

    static func same(_ one: cnm_simple_response?, _ other: cnm_simple_response?) -> Bool {
      guard let one, let other else { return one == nil && other == nil }
      return one.length == other.length && one.status == other.status && one.framing.content_length == other.framing.content_length
        && one.framing.framed_at == other.framing.framed_at && one.framing.chunked_at == other.framing.chunked_at
    }
  }

  /// The hooks' last request on a connection: what `cnm_read_simple_request` reads the next one
  /// after.
  struct LastRequest {
    var fields = cnm_simple_request()
    var bytes = [UInt8](repeating: 0, count: Int(CNM_SIMPLE_HEAD_CAPACITY))

    /// The fields read from `request` after the last request (nil when refused: then the last stays).
    mutating func read(_ request: [UInt8]) -> cnm_simple_request? {
      let before = self
      guard cnm_read_simple_request(request, request.count, &fields, &bytes) else {
        #expect(Self.same(fields, before.fields) && bytes == before.bytes, "a refused request changed the last")
        return nil
      }
      #expect(bytes.prefix(Int(fields.length)) == request.prefix(Int(fields.length)))
      return fields
    }

    static func same(_ one: cnm_simple_request?, _ other: cnm_simple_request?) -> Bool {
      guard let one, let other else { return one == nil && other == nil }
      return one.length == other.length && one.method_length == other.method_length
        && one.target_length == other.target_length && one.host_offset == other.host_offset
        && one.host_length == other.host_length && one.connection == other.connection
        && one.connection_at == other.connection_at && one.framing.framed_at == other.framing.framed_at
        && one.framing.content_length == other.framing.content_length && one.framing.chunked_at == other.framing.chunked_at
        && one.minor_version == other.minor_version
    }
  }

  /// Whether the Swift parser reads the request head at the start of `bytes`, and a body of its
  /// Content-Length (or an empty chunked one), to the record the hooks write: the head's scalars as
  /// `cnm_replay_request_scalars` writes them, byte for byte, and its text (method, target, Host).
  static func swiftAgrees(request bytes: [UInt8], _ fields: cnm_simple_request) -> Bool {
    var run = HTTPRun(.requests)
    let length = Int(fields.length)
    guard length <= bytes.count else { return false }
    let body = fields.framing.chunked_at != 0 ? Array("0\r\n\r\n".utf8) : Array(repeating: UInt8(ascii: "x"), count: Int(fields.framing.content_length))
    run.feed(ArraySlice(bytes[..<length] + body))
    guard run.events == [.started, .head, .complete(UInt64(length + body.count))],
      let head = run.heads.first
    else { return false }
    let hostStart = Int(fields.host_offset)
    let method = Int(fields.method_length)
    let text = bytes[..<method] + bytes[method + 1..<method + 1 + Int(fields.target_length)]
      + bytes[hostStart..<hostStart + Int(fields.host_length)]
    let scalarsLength = MemoryLayout<HTTPHead>.offset(of: \.text)!
    var scalars = [UInt8](repeating: 0xEE, count: scalarsLength)
    var request = fields
    cnm_replay_request_scalars(&request, &scalars)
    let swiftScalars = withUnsafeBytes(of: head) { Array($0.prefix(scalarsLength)) }
    return withUnsafePointer(to: head) { Array($0.textBytes) } == Array(text) && scalars == swiftScalars
      && head.requestKind == (bytes.starts(with: Array("HEAD ".utf8)) ? .head : .ordinary) && !head.targetTruncated
      && !head.hostTruncated
  }

  /// Whether the Swift parser reads the response head at the start of `bytes` (answering a GET, or
  /// `answeringHEAD`) to the fields the hooks read: its status, its length, and the body the replay
  /// counts (exchange_replay.c): none for HEAD, 204 and 304, else one of its Content-Length, which
  /// ends the message, or a chunked one (`0\r\n\r\n` here), or, without either, a body that runs
  /// to the close (which the replay leaves to Swift). (Its version, 1.1 or 1.0, and its
  /// `Connection` are in no record, and change nothing here.)
  static func swiftAgrees(response bytes: [UInt8], _ fields: cnm_simple_response, answeringHEAD: Bool = false) -> Bool {
    var run = HTTPRun(.responses, expecting: [answeringHEAD ? .head : .ordinary])
    let length = Int(fields.length)
    let bodiless = answeringHEAD || fields.status == 204 || fields.status == 304
    let chunked = fields.framing.chunked_at != 0
    let body = bodiless ? [] : chunked ? Array("0\r\n\r\n".utf8) : Array(repeating: UInt8(ascii: "x"), count: Int(fields.framing.content_length))
    run.feed(ArraySlice(bytes[..<length] + body))
    guard let head = run.heads.first, head.status == fields.status, head.hasTransferEncoding == chunked,
      head.isChunked == chunked, !head.connectionUpgrade, !(chunked && head.hasContentLength),
      head.hasContentLength == (fields.framing.framed_at != 0), !head.hasContentLength || head.contentLengthValue == fields.framing.content_length
    else { return false }
    if !bodiless && !chunked && fields.framing.framed_at == 0 {
      return run.events == [.started, .head] && head.bodyFraming == .untilClose
    }
    return run.events == [.started, .head, .complete(UInt64(length + body.count))]
      && head.bodyFraming == (bodiless ? .none : chunked ? .chunked : .contentLength)
  }

  @Test("heads a client, nginx or wrk sends are simple, and read as the Swift parser reads them")
  func simpleHeads() throws {
    for text in Self.requests {
      let bytes = Array(text.utf8)
      let fields = try #require(Self.request(bytes), "\(text)")
      #expect(Self.swiftAgrees(request: bytes, fields), "\(text)")
    }
    for text in Self.responses + Self.bodilessResponses {
      let bytes = Array((text + "body").utf8)
      let fields = try #require(Self.response(bytes), "\(text)")
      #expect(Int(fields.length) == text.utf8.count)
      #expect(Self.swiftAgrees(response: bytes, fields), "\(text)")
      #expect(Self.swiftAgrees(response: bytes, fields, answeringHEAD: true), "\(text) answering HEAD")
    }
    let host = try #require(Self.request(Array(Self.requests[1].utf8)))
    #expect(host.host_length == 13 && host.connection == CNM_CONNECTION_KEEP_ALIVE)
    let urllib = try #require(Self.request(Array(Self.requests[3].utf8)))
    #expect(urllib.connection == CNM_CONNECTION_CLOSE)
    let posted = try #require(Self.request(Array(Self.requests[4].utf8)))
    #expect(posted.method_length == 4 && posted.framing.content_length == 13 && Int(posted.length) == Self.requests[4].utf8.count - 13)
    // A head is read to its blank line: what follows is its body, or (no Content-Length) more than
    // the request, which the replay leaves to Swift (ExchangeReplayTests).
    let browser = try #require(Self.request(Array(Self.requests[14].utf8)))
    #expect(browser.length > 1_024 && browser.length < CNM_SIMPLE_HEAD_CAPACITY && browser.connection == CNM_CONNECTION_KEEP_ALIVE)
    #expect(try #require(Self.request(Array(Self.requests[19].utf8))).target_length == CNM_SIMPLE_TARGET_CAPACITY)
    let propfind = try #require(Self.request(Array(Self.requests[15].utf8)))
    #expect(propfind.method_length == 8 && propfind.framing.content_length == 4)
    #expect(try #require(Self.request(Array(Self.requests[18].utf8))).method_length == CNM_SIMPLE_METHOD_CAPACITY)
    let followed = try #require(Self.request(Array("GET / HTTP/1.1\r\nHost: h\r\n\r\nGET".utf8)))
    #expect(followed.length == 27 && followed.framing.content_length == 0 && followed.framing.framed_at == 0)
  }

  @Test(
    "requests the hooks leave to Swift",
    arguments: [
      "CONNECT h:443 HTTP/1.1\r\nHost: h:443\r\n\r\n",
      "get / HTTP/1.1\r\nHost: h\r\n\r\n", "M-SEARCH * HTTP/1.1\r\nHost: h\r\n\r\n", "X_Y / HTTP/1.1\r\n\r\n",
      "ABCDEFGHIJKLMNOP / HTTP/1.1\r\nHost: h\r\n\r\n", "CONNECT / HTTP/1.1\r\n\r\n", "GET\t/ HTTP/1.1\r\n\r\n",
      "GET / HTTP/1.2\r\nHost: h\r\n\r\n", "GET / HTTP/2.0\r\nHost: h\r\n\r\n", "GET / HTTP/1.\r\n\r\n",
      "POST / HTTP/1.1\r\nContent-Length: 1, 1\r\n\r\nx",
      "POST / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\nx", "PUT / HTTP/1.1\r\nContent-Length: +1\r\n\r\nx",
      "POST / HTTP/1.1\r\nContent-Length: 1234567890123456789\r\n\r\n", "POST / HTTP/1.1\r\nContent-Length:\r\n\r\n",
      "POST / HTTP/1.1\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n",
      "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n",
      "POST / HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
      "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n",
      "GET / HTTP/1.1\r\nConnection: close, TE\r\n\r\n", "GET / HTTP/1.1\r\nConnection: Upgrade\r\nUpgrade: h2c\r\n\r\n",
      "GET / HTTP/1.1\r\nConnection: keep-alive, Upgrade\r\n\r\n", "GET / HTTP/1.1\r\nX: a\r\n b\r\n\r\n",
      "GET / HTTP/1.1\nHost: h\n\n", "GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",
      "GET / HTTP/1.1\r\nHost: \r\n\r\n", "GET / HTTP/1.1\r\nHost: \(String(repeating: "h", count: 257))\r\n\r\n",
      "GET /\(String(repeating: "p", count: 512)) HTTP/1.1\r\n\r\n",
      "GET / HTTP/1.1\r\nX-Long: \(String(repeating: "v", count: 2048))\r\n\r\n",
      "GET / HTTP/1.1\r\nHost: h\r\n", "GET / HTTP/1.1\r\nX_Y: 1\r\n\r\n", "GET / HTTP/1.1\r\nX : 1\r\n\r\n",
      "GET  / HTTP/1.1\r\n\r\n", "GET / HTTP/1.1\r\nX: \u{7F}\r\n\r\n",
      "GET / HTTP/1.1\r\nConnection: keep-alive\r\nConnection: keep-alive\r\n\r\n",
      "GET / HTTP/1.1\r\nConnection: close\r\nConnection: close\r\n\r\n", "GET / HTTP/1.1\r\nConnection: closed\r\n\r\n",
    ])
  func refusedRequests(text: String) {
    #expect(Self.request(Array(text.utf8)) == nil)
  }

  @Test(
    "responses the hooks leave to Swift",
    arguments: [
      "HTTP/1.1 100 Continue\r\n\r\n", "HTTP/1.1 101 Switching Protocols\r\nConnection: upgrade\r\n\r\n",
      "HTTP/1.1 103 Early Hints\r\nLink: </s.css>\r\n\r\n", "HTTP/1.2 200 OK\r\nContent-Length: 1\r\n\r\n",
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n",
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n",
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n",
      "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n",
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked;x=1\r\n\r\n", "HTTP/1.1 200 OK\r\nTransfer-Encoding:\r\n\r\n",
      "HTTP/1.1 200 OK\r\nContent-Length: 1, 1\r\n\r\n",
      "HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\n",
      "HTTP/1.1 200 OK\r\nContent-Length: +1\r\n\r\n", "HTTP/1.1 200 OK\r\nContent-Length: 1 2\r\n\r\n",
      "HTTP/1.1 200 OK\r\nContent-Length: 1234567890123456789\r\n\r\n",
      "HTTP/1.1 200 OK\r\nConnection: close, x\r\nContent-Length: 1\r\n\r\n",
      "HTTP/1.1 101 Switching Protocols\r\nConnection: close\r\nContent-Length: 1\r\n\r\n",
      "HTTP/1.1 200\r\nContent-Length: 1\r\n\r\n", "HTTP/1.1 200 OK\r\nContent-Length: 1\r\n",
      "HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\(String(repeating: "X-Pad: 0123456789\r\n", count: 110))\r\n",
    ])
  func refusedResponses(text: String) {
    #expect(Self.response(Array(text.utf8)) == nil)
  }

  /// SplitMix64: the same mutations on every run.
  struct Mutations {
    var state: UInt64
    mutating func next() -> UInt64 {
      state &+= 0x9E37_79B9_7F4A_7C15
      var value = state
      value = (value ^ (value >> 30)) &* 0xBF58_476D_1CE4_E5B9
      value = (value ^ (value >> 27)) &* 0x94D0_49BB_1331_11EB
      return value ^ (value >> 31)
    }
    /// Bytes that decide how a head is read.
    static let telling = Array(" \t\r\n:,;-_0123456789aAhHcCgGTP/.\u{7F}".utf8) + [0x00, 0x80, 0xFF]
    /// `bytes` with one to three bytes replaced, inserted or removed.
    mutating func mutate(_ bytes: [UInt8]) -> [UInt8] {
      var bytes = bytes
      for _ in 0...(next() % 3) where !bytes.isEmpty {
        let at = Int(next() % UInt64(bytes.count))
        let byte = Self.telling[Int(next() % UInt64(Self.telling.count))]
        switch next() % 3 {
        case 0: bytes[at] = byte
        case 1: bytes.insert(byte, at: at)
        default: bytes.remove(at: at)
        }
      }
      return bytes
    }
  }

  @Test("a response head read after the last one is read as if alone: from its first line that differs")
  func responsesAfterTheLast() {
    // A server's heads, as nginx writes them: Date, Content-Length, Last-Modified and ETag change.
    func served(_ second: Int, _ length: Int, _ modified: Int) -> [UInt8] {
      Array(
        ("HTTP/1.1 200 OK\r\nServer: nginx/1.22.1\r\nDate: Thu, 26 Nov 2026 13:00:\(10 + second) GMT\r\n"
          + "Content-Type: application/octet-stream\r\nContent-Length: \(length)\r\n"
          + "Last-Modified: Wed, 25 Nov 2026 0\(modified):00:00 GMT\r\nConnection: keep-alive\r\n"
          + "ETag: \"6925\(modified)-\(String(length, radix: 16))\"\r\nAccept-Ranges: bytes\r\n\r\nbody").utf8)
    }
    var last = LastResponse()
    for (second, length, modified) in [(0, 512, 1), (0, 512, 1), (0, 7_000, 1), (1, 7_000, 2), (1, 10, 2), (2, 8_000, 3)] {
      let head = served(second, length, modified)
      let fields = last.read(head)
      #expect(LastResponse.same(fields, Self.response(head)) && fields?.framing.content_length == UInt64(length))
    }
    // A head with more lines than the last (a chunked answer with a header the last had not,
    // after one of known length), fewer, and the same again.
    for text in [
      "HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\n", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nX-Trace: 1\r\n\r\n",
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nX-Trace: 1\r\nX-More: 2\r\n\r\n",
      "HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\n", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
    ] {
      let head = Array((text + "5\r\nhello").utf8)
      let fields = last.read(head)
      #expect(LastResponse.same(fields, Self.response(head)) && fields?.length == UInt16(text.utf8.count), "\(text)")
    }
    // Mutations of mutations: each read after the last one the hooks accepted, against the same
    // head read alone; and the last unchanged by every head refused.
    var mutations = Mutations(state: 0xD1FF)
    var resumed = 0
    for round in 0..<20_000 {
      if round % 50 == 0 { last = LastResponse() }
      let base = last.fields.length == 0
        ? Array((Self.responses[round % Self.responses.count] + "body").utf8)
        : Array(last.bytes.prefix(Int(last.fields.length))) + Array("body".utf8)
      let head = mutations.mutate(base)
      let alone = Self.response(head)
      if last.fields.length != 0 && alone != nil { resumed += 1 }
      let after = last.read(head)
      #expect(LastResponse.same(after, alone), "\(String(decoding: head, as: UTF8.self).debugDescription)")
    }
    #expect(resumed > 2_000, "\(resumed)")
  }

  @Test("a request read after the last one is read as if alone: its header lines from the first that differs")
  func requestsAfterTheLast() {
    // A client's requests: the target changes, the header lines stay or one changes.
    func sent(_ target: String, _ id: Int?, connection: String = "keep-alive") -> [UInt8] {
      Array(
        ("GET \(target) HTTP/1.1\r\nHost: svc.test:8080\r\nUser-Agent: probe/1.0\r\nAccept: */*\r\n"
          + "Connection: \(connection)\r\n" + (id.map { "X-Request-Id: r-\($0)\r\n" } ?? "") + "\r\n").utf8)
    }
    var last = LastRequest()
    let requests = [
      sent("/a", nil), sent("/bb?x=1", nil), sent("/", nil), sent("/c", 7), sent("/c", 12), sent("/dd/e", 1_000),
      sent("/f", 1_000, connection: "close"), sent("/f", nil), sent("/g", nil, connection: "Keep-Alive"),
    ]
    for request in requests {
      let fields = last.read(request)
      #expect(LastRequest.same(fields, Self.request(request)), "\(String(decoding: request, as: UTF8.self))")
    }
    var mutations = Mutations(state: 0x0E0E)
    var resumed = 0
    for round in 0..<20_000 {
      if round % 50 == 0 { last = LastRequest() }
      let base = last.fields.length == 0
        ? Array(Self.requests[round % Self.requests.count].utf8) : Array(last.bytes.prefix(Int(last.fields.length)))
      let request = mutations.mutate(base)
      let alone = Self.request(request)
      if last.fields.length != 0 && alone != nil { resumed += 1 }
      let after = last.read(request)
      #expect(LastRequest.same(after, alone), "\(String(decoding: request, as: UTF8.self).debugDescription)")
    }
    #expect(resumed > 2_000, "\(resumed)")
  }

  @Test("every mutated head the hooks accept, the Swift parser reads to the same fields")
  func mutatedHeads() {
    var mutations = Mutations(state: 0x5EED)
    var accepted = (requests: 0, responses: 0)
    var refused = (requests: 0, responses: 0)
    for round in 0..<20_000 {
      let request = mutations.mutate(Array(Self.requests[round % Self.requests.count].utf8))
      if let fields = Self.request(request) {
        accepted.requests += 1
        #expect(Self.swiftAgrees(request: request, fields), "\(String(decoding: request, as: UTF8.self).debugDescription)")
      } else {
        refused.requests += 1
      }
      let heads = Self.responses + Self.bodilessResponses
      let response = mutations.mutate(Array((heads[round % heads.count] + "body").utf8))
      if let fields = Self.response(response) {
        accepted.responses += 1
        let text = String(decoding: response, as: UTF8.self).debugDescription
        #expect(Self.swiftAgrees(response: response, fields), "\(text)")
        #expect(Self.swiftAgrees(response: response, fields, answeringHEAD: true), "\(text) answering HEAD")
      } else {
        refused.responses += 1
      }
    }
    // Not vacuous: many mutations stay simple, many do not.
    #expect(accepted.requests > 2_000 && refused.requests > 2_000, "\(accepted) \(refused)")
    #expect(accepted.responses > 2_000 && refused.responses > 2_000, "\(accepted) \(refused)")
  }
}
