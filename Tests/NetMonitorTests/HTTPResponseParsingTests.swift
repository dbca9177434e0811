import Testing

@testable import NetMonitor

@Suite("HTTP response framing")
struct HTTPResponseParsingTests {
  @Test("a 200 with Content-Length: status, version, body counted")
  func contentLength() {
    let text = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 5\r\n\r\nhello"
    let run = HTTPRun.parse(text, .responses)
    #expect(run.events == message(text))
    let head = try! #require(run.heads.first)
    #expect(head.status == 200 && head.minorVersion == 1 && !head.isRequest)
    #expect(head.methodString == "" && head.contentLength == 5 && head.bodyFraming == .contentLength)
  }

  @Test("every event comes with its message's head: messageComplete knows the status")
  func headBesideEvents() {
    var statuses: [(String, UInt16)] = []
    var parser = HTTPStreamParser()
    let text = "HTTP/1.1 201 Created\r\nContent-Length: 1\r\n\r\nxHTTP/1.0 404 Not Found\r\n\r\nbye"
    Array(text.utf8).withUnsafeBytes { raw in
      parser.feed(raw, as: .responses) { event, head in statuses.append(("\(event)", head.pointee.status)) }
    }
    parser.finish { event, head in statuses.append(("\(event)", head.pointee.status)) }
    #expect(statuses.map(\.1) == [0, 201, 201, 0, 404, 404])
    #expect(statuses.last?.0 == "messageComplete(totalBytes: 29)")
  }

  @Test("a status line without reason phrase, with or without its space")
  func noReason() {
    let bare = "HTTP/1.1 404\r\nContent-Length: 0\r\n\r\n"
    #expect(HTTPRun.parse(bare, .responses).events == message(bare))
    let spaced = "HTTP/1.1 404 \r\nContent-Length: 0\r\n\r\n"
    #expect(HTTPRun.parse(spaced, .responses).heads.first?.status == 404)
  }

  @Test("100 Continue is its own message; the final response answers the same request")
  func continueThenFinal() {
    let interim = "HTTP/1.1 100 Continue\r\n\r\n"
    let final = "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\n"
    let run = HTTPRun.parse(interim + final, .responses, expecting: [.head])
    // The 100 does not consume the HEAD entry: the 200 answers HEAD and has no body.
    #expect(run.events == message(interim) + message(final))
    #expect(run.heads.map(\.status) == [100, 200])
    #expect(run.heads[0].bodyFraming == .none && run.heads[1].answeredRequestKind == .head)
    #expect(run.parser.pendingResponseCount == 0)
  }

  @Test("103 Early Hints carries headers but no body")
  func earlyHints() {
    let hints = "HTTP/1.1 103 Early Hints\r\nLink: </s.css>; rel=preload\r\nContent-Length: 9\r\n\r\n"
    let final = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"
    #expect(HTTPRun.parse(hints + final, .responses).events == message(hints) + message(final))
  }

  @Test("204 and 304 have no body whatever their headers say", arguments: [204, 304])
  func noContent(status: Int) {
    let first = "HTTP/1.1 \(status) X\r\nContent-Length: 42\r\nTransfer-Encoding: chunked\r\n\r\n"
    let second = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"
    let run = HTTPRun.parse(first + second, .responses)
    #expect(run.events == message(first) + message(second))
  }

  @Test("a response to HEAD has no body; the next one, to GET, does")
  func headResponse() {
    let toHead = "HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n"
    let toGet = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhi"
    let run = HTTPRun.parse(toHead + toGet, .responses, expecting: [.head, .ordinary])
    #expect(run.events == message(toHead) + message(toGet))
    #expect(run.heads.map(\.answeredRequestKind) == [.head, .ordinary])
    #expect(run.heads[0].contentLength == 1000 && run.heads[0].bodyFraming == .none)
  }

  @Test("the request parser's heads drive the response parser's HEAD FIFO")
  func requestDrivesResponses() {
    var requests = HTTPRun(.requests)
    requests.feed("HEAD /a HTTP/1.1\r\n\r\nGET /b HTTP/1.1\r\n\r\nHEAD /c HTTP/1.1\r\n\r\n")
    var responses = HTTPRun(.responses, expecting: requests.heads.map(\.requestKind))
    let noBody = "HTTP/1.1 200 OK\r\nContent-Length: 7\r\n\r\n"
    let body = noBody + "1234567"
    responses.feed(noBody + body + noBody)
    #expect(responses.events == message(noBody) + message(body) + message(noBody))
  }

  @Test("more unanswered requests than the FIFO holds are dropped, not misplaced")
  func fifoCapacity() {
    var parser = HTTPStreamParser()
    for _ in 0..<(HTTPStreamParser.pendingCapacity + 5) { parser.expectResponse(to: .head) }
    #expect(parser.pendingResponseCount == HTTPStreamParser.pendingCapacity)
  }

  @Test("a chunked response with trailers")
  func chunked() {
    let text =
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nWiki\r\n5\r\npedia\r\nE\r\n in\r\n\r\nchunks.\r\n"
      + "0\r\nServer-Timing: db;dur=53\r\n\r\n"
    let run = HTTPRun.parse(text + "HTTP/1.1 204 No Content\r\n\r\n", .responses)
    #expect(Array(run.events.prefix(3)) == message(text))
    #expect(run.events.count == 6)
  }

  @Test("no length and not chunked: the body runs until the connection closes")
  func closeDelimited() {
    let text = "HTTP/1.0 200 OK\r\nServer: old\r\n\r\n<html>…</html>"
    var run = HTTPRun(.responses)
    run.feed(text)
    #expect(run.events == [.started, .head])
    #expect(run.heads.first?.bodyFraming == .untilClose)
    run.feed(" more bytes, even HTTP/1.1 200 OK\r\n\r\n")
    run.finish()
    let total = text.utf8.count + " more bytes, even HTTP/1.1 200 OK\r\n\r\n".utf8.count
    #expect(run.events == [.started, .head, .complete(UInt64(total))])
  }

  @Test("a transfer coding other than chunked last means close-delimited")
  func gzipOnly() {
    let run = HTTPRun.parse("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\nxyz", .responses)
    #expect(run.heads.first?.bodyFraming == .untilClose)
  }

  @Test("the end of the stream inside a body reports the message incomplete")
  func cutShort() {
    let text = "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\npartial"
    let run = HTTPRun.parse(text, .responses, finish: true)
    #expect(run.events == [.started, .head, .incomplete(UInt64(text.utf8.count))])
  }

  @Test("101 Switching Protocols: the rest of the stream is ignored")
  func switchingProtocols() {
    let text = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n"
    let run = HTTPRun.parse(text + "\u{81}\u{05}hello", .responses, expecting: [.ordinary])
    #expect(run.events == message(text) + [.switched])
    #expect(run.parser.isTunnel && run.heads.first?.connectionUpgrade == true)
    #expect(run.parser.pendingResponseCount == 0)
  }

  @Test("a 2xx to CONNECT starts a tunnel; the request side is told with enterTunnel")
  func connectTunnel() {
    let text = "HTTP/1.1 200 Connection Established\r\n\r\n"
    let run = HTTPRun.parse(text + "\u{16}\u{03}\u{01}", .responses, expecting: [.connect])
    #expect(run.events == message(text) + [.switched])
    var requests = HTTPRun(.requests)
    requests.feed("CONNECT h:443 HTTP/1.1\r\n\r\n")
    requests.parser.enterTunnel()
    requests.feed("\u{16}\u{03}\u{01}")
    #expect(requests.events.last == .complete(26) && requests.parser.isTunnel)
  }

  @Test("a refused CONNECT is an ordinary response")
  func connectRefused() {
    let text = "HTTP/1.1 407 Proxy Authentication Required\r\nContent-Length: 2\r\n\r\nno"
    let run = HTTPRun.parse(text, .responses, expecting: [.connect])
    #expect(run.events == message(text) && !run.parser.isTunnel)
  }

  @Test("keep-alive stream of mixed responses")
  func keepAliveStream() {
    let a = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
    let b = "HTTP/1.1 301 Moved\r\nLocation: /x\r\ncontent-length: 0\r\n\r\n"
    let c = "HTTP/1.1 500 Oops\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n3\r\nbad\r\n0\r\n\r\n"
    let run = HTTPRun.parse(a + b + c, .responses)
    #expect(run.events == message(a) + message(b) + message(c))
    #expect(run.heads.map(\.status) == [200, 301, 500])
    #expect(run.heads.map(\.keepAlive) == [true, true, false])
  }
}
