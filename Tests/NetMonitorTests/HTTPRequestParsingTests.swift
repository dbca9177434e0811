import Testing

@testable import NetMonitor

@Suite("HTTP request framing")
struct HTTPRequestParsingTests {
  @Test("a GET: method, target, Host, version, no body")
  func simpleGet() {
    let text = "GET /search?q=swift HTTP/1.1\r\nHost: example.com\r\nAccept: */*\r\n\r\n"
    let run = HTTPRun.parse(text, .requests)
    #expect(run.events == message(text))
    let head = try! #require(run.heads.first)
    #expect(head.methodString == "GET")
    #expect(head.targetString == "/search?q=swift")
    #expect(head.hostString == "example.com")
    #expect(head.minorVersion == 1 && head.versionString == "1.1")
    #expect(head.isRequest && head.status == 0)
    #expect(head.bodyFraming == .none && head.contentLength == nil)
    #expect(head.keepAlive && !head.targetTruncated)
    #expect(head.requestKind == .ordinary && !head.isHEAD)
    #expect(run.parser.isBetweenMessages)
  }

  @Test(
    "common methods are recognised",
    arguments: ["GET", "HEAD", "POST", "PUT", "DELETE", "OPTIONS", "PATCH", "TRACE", "PROPFIND",
      "BASELINE-CONTROL"])
  func methods(method: String) {
    let text = "\(method) /x HTTP/1.1\r\nHost: h\r\n\r\n"
    let run = HTTPRun.parse(text, .requests)
    #expect(run.events == message(text))
    #expect(run.heads.first?.methodString == method)
    #expect(run.heads.first?.isHEAD == (method == "HEAD"))
  }

  @Test("CONNECT: authority target, no body, request kind connect")
  func connect() {
    let text = "CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\nContent-Length: 10\r\n\r\n"
    let run = HTTPRun.parse(text, .requests)
    #expect(run.events == message(text))
    #expect(run.heads.first?.targetString == "example.com:443")
    #expect(run.heads.first?.requestKind == .connect)
  }

  @Test("a Content-Length body is counted exactly")
  func contentLengthBody() {
    let text = "POST /upload HTTP/1.1\r\nHost: h\r\nContent-Length: 11\r\n\r\nhello world"
    let run = HTTPRun.parse(text, .requests)
    #expect(run.events == message(text))
    #expect(run.heads.first?.contentLength == 11)
    #expect(run.heads.first?.bodyFraming == .contentLength)
  }

  @Test("Content-Length: 0, a list of equal values, and repeated equal headers")
  func contentLengthForms() {
    let zero = "PUT /a HTTP/1.1\r\nContent-Length:0\r\n\r\n"
    #expect(HTTPRun.parse(zero, .requests).events == message(zero))
    let list = "PUT /a HTTP/1.1\r\nContent-Length: 3 , 3\r\ncontent-length:\t3 \r\n\r\nabc"
    let run = HTTPRun.parse(list, .requests)
    #expect(run.events == message(list))
    #expect(run.heads.first?.contentLength == 3)
  }

  @Test("a chunked body with extensions and trailers")
  func chunkedBody() {
    let text =
      "POST /c HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: gzip, Chunked\r\n\r\n"
      + "5;name=value\r\nhello\r\n1A ; a=\"b\"\r\nabcdefghijklmnopqrstuvwxyz\r\n"
      + "0\r\nExpires: never\r\nX-Checksum: 1\r\n\r\n"
    let run = HTTPRun.parse(text, .requests)
    #expect(run.events == message(text))
    #expect(run.heads.first?.isChunked == true)
    #expect(run.heads.first?.bodyFraming == .chunked)
  }

  @Test("chunked wins over Content-Length")
  func chunkedOverContentLength() {
    let text = "POST / HTTP/1.1\r\nContent-Length: 100\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"
    #expect(HTTPRun.parse(text, .requests).events == message(text))
  }

  @Test("pipelined requests in one buffer, with a stray blank line between them")
  func pipelined() {
    let first = "GET /1 HTTP/1.1\r\nHost: a\r\n\r\n"
    let second = "POST /2 HTTP/1.1\r\nHost: a\r\nContent-Length: 4\r\n\r\nbody"
    let third = "HEAD /3 HTTP/1.1\r\nHost: a\r\n\r\n"
    let run = HTTPRun.parse(first + second + "\r\n" + third, .requests)
    #expect(run.events == message(first) + message(second) + message(third))
    #expect(run.heads.map(\.targetString) == ["/1", "/2", "/3"])
    #expect(run.heads.map(\.requestKind) == [.ordinary, .ordinary, .head])
  }

  @Test("a request without body headers has no body: the next bytes start a new request")
  func noBodyWithoutHeaders() {
    let first = "DELETE /item/7 HTTP/1.1\r\n\r\n"
    let run = HTTPRun.parse(first + "GET", .requests)
    #expect(run.events == message(first) + [.started])
    #expect(!run.parser.isBetweenMessages)
  }

  @Test("header names are case-insensitive; Host is trimmed and the first one wins")
  func headerNames() {
    let text =
      "GET / HTTP/1.1\r\nhOsT: \t api.example.com:8080  \r\nHOST: other\r\nCONTENT-LENGTH: 2\r\n"
      + "X-Host: no\r\nHostname: no\r\n\r\nok"
    let run = HTTPRun.parse(text, .requests)
    #expect(run.events == message(text))
    #expect(run.heads.first?.hostString == "api.example.com:8080")
    #expect(run.heads.first?.contentLength == 2)
  }

  @Test("an empty Host value is no host")
  func emptyHost() {
    let run = HTTPRun.parse("GET / HTTP/1.1\r\nHost:\r\n\r\n", .requests)
    #expect(run.heads.first?.hostString == nil)
  }

  @Test("long targets and Host values are truncated at capacity, and flagged")
  func truncation() {
    let path = "/" + String(repeating: "p", count: 2000)
    let host = String(repeating: "h", count: 300)
    let text = "GET \(path) HTTP/1.1\r\nHost: \(host)\r\n\r\n"
    let run = HTTPRun.parse(text, .requests)
    #expect(run.events == message(text))
    let head = try! #require(run.heads.first)
    #expect(head.targetTruncated && head.targetString == String(path.prefix(HTTPHead.targetCapacity)))
    #expect(head.hostTruncated && head.hostString == String(host.prefix(HTTPHead.hostCapacity)))
  }

  @Test("HTTP/1.0 and Connection options decide keep-alive")
  func versionsAndConnection() {
    let old = HTTPRun.parse("GET / HTTP/1.0\r\n\r\n", .requests).heads[0]
    #expect(old.minorVersion == 0 && old.versionString == "1.0" && !old.keepAlive)
    let oldKeep = HTTPRun.parse("GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n", .requests).heads[0]
    #expect(oldKeep.connectionKeepAlive && oldKeep.keepAlive)
    let close = HTTPRun.parse("GET / HTTP/1.1\r\nConnection: foo, close\r\n\r\n", .requests).heads[0]
    #expect(close.connectionClose && !close.keepAlive)
    let upgrade = HTTPRun.parse(
      "GET /ws HTTP/1.1\r\nConnection: keep-alive, Upgrade\r\nUpgrade: websocket\r\n\r\n", .requests
    ).heads[0]
    #expect(upgrade.connectionUpgrade && upgrade.connectionKeepAlive && !upgrade.connectionClose)
  }

  @Test("bare LF line ends are accepted")
  func bareLineFeeds() {
    let text = "GET / HTTP/1.1\nHost: h\nContent-Length: 1\n\nx"
    let run = HTTPRun.parse(text, .requests)
    #expect(run.events == message(text))
    #expect(run.heads.first?.hostString == "h")
  }

  @Test("obsolete line folding is skipped")
  func obsFold() {
    let text = "GET / HTTP/1.1\r\nX-Long: a\r\n  b\r\nHost: h\r\n\r\n"
    let run = HTTPRun.parse(text, .requests)
    #expect(run.events == message(text))
    #expect(run.heads.first?.hostString == "h")
  }

  @Test("a request whose last transfer coding is not chunked cannot be framed")
  func requestWithoutChunkedLast() {
    let run = HTTPRun.parse("POST / HTTP/1.1\r\nTransfer-Encoding: chunked, gzip\r\n\r\n", .requests)
    #expect(run.events == [.started, .gaveUp])
  }

  @Test("a message cut short by the end of the stream is reported incomplete")
  func incomplete() {
    let text = "POST / HTTP/1.1\r\nContent-Length: 10\r\n\r\nabc"
    let run = HTTPRun.parse(text, .requests, finish: true)
    #expect(run.events == [.started, .head, .incomplete(UInt64(text.utf8.count))])
    #expect(run.parser.isBetweenMessages)
  }
}
