import Testing

@testable import NetMonitor

/// A head that repeats the last one byte for byte is compared, not parsed (`HTTPHeadMemo`): it must
/// decide exactly as a parse would, and only the very same bytes may take that path.
@Suite("HTTP head memo")
struct HTTPHeadMemoTests {
  static let request = "GET /1k.bin HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n\r\n"
  static let responseHead = "HTTP/1.1 200 OK\r\nServer: nginx\r\nContent-Length: 5\r\nConnection: keep-alive\r\n\r\n"

  /// What a parser that never saw the earlier messages makes of each one.
  static func freshSummaries(_ messages: [String], _ kind: HTTPDirectionKind, expecting: [HTTPRequestKind] = [])
    -> [HeadSummary]
  {
    zip(messages, expecting.isEmpty ? Array(repeating: .ordinary, count: messages.count) : expecting).flatMap {
      HTTPRun.parse($0, kind, expecting: kind == .responses ? [$1] : []).summaries
    }
  }

  @Test("a repeated request head is remembered and decides like a parse, in one buffer or one per call")
  func repeatedRequests() {
    let messages = Array(repeating: Self.request, count: 3)
    var together = HTTPRun(.requests)
    together.feed(messages.joined())
    var apart = HTTPRun(.requests)
    for message in messages { apart.feed(message) }
    for run in [together, apart] {
      #expect(run.events == messages.flatMap(message))
      #expect(run.summaries == Self.freshSummaries(messages, .requests))
      #expect(Int(run.parser.headMemo.length) == Self.request.utf8.count)
    }
  }

  @Test("a head that differs in one byte is parsed anew")
  func oneByteDiffers() {
    let messages = [Self.request, "GET /2k.bin HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n\r\n", Self.request]
    let run = HTTPRun.parse(messages.joined(), .requests)
    #expect(run.events == messages.flatMap(message))
    #expect(run.summaries.map(\.target) == ["/1k.bin", "/2k.bin", "/1k.bin"])
    #expect(run.summaries == Self.freshSummaries(messages, .requests))
  }

  @Test("the framing of a repeated response head is decided again: no body when it answers HEAD")
  func framingFollowsTheRequest() {
    let kinds: [HTTPRequestKind] = [.ordinary, .head, .ordinary]
    let withBody = Self.responseHead + "hello"
    let run = HTTPRun.parse(withBody + Self.responseHead + withBody, .responses, expecting: kinds)
    #expect(run.events == message(withBody) + message(Self.responseHead) + message(withBody))
    #expect(run.summaries == Self.freshSummaries([withBody, Self.responseHead, withBody], .responses, expecting: kinds))
    #expect(run.summaries.map(\.bodyFraming) == [.contentLength, .none, .contentLength])
  }

  @Test("a head that came in pieces, or is longer than the memo, is not remembered")
  func notRemembered() {
    var cut = HTTPRun(.requests)
    cut.feed(Array((Self.request + Self.request).utf8), cuts: [10])
    #expect(cut.events == message(Self.request) + message(Self.request))
    #expect(Int(cut.parser.headMemo.length) == Self.request.utf8.count)  // the second one was whole

    var pieces = HTTPRun(.requests)
    pieces.feed(Array(Self.request.utf8), cuts: [10])
    #expect(pieces.parser.headMemo.length == 0)

    let long = "GET /\(String(repeating: "x", count: HTTPHeadMemo.capacity)) HTTP/1.1\r\n\r\n"
    let run = HTTPRun.parse(long + long, .requests)
    #expect(run.events == message(long) + message(long))
    #expect(run.parser.headMemo.length == 0)
    #expect(run.summaries == Self.freshSummaries([long, long], .requests))
  }

  @Test("a buffer holding only the start of the remembered head is parsed; its rest arrives later")
  func partialRepeat() {
    let bytes = Array((Self.request + Self.request).utf8)
    let secondStart = Self.request.utf8.count
    var run = HTTPRun(.requests)
    run.feed(bytes, cuts: [secondStart + 20])
    #expect(run.events == message(Self.request) + message(Self.request))
    #expect(run.summaries == Self.freshSummaries([Self.request, Self.request], .requests))
  }

  @Test("finish forgets the remembered head")
  func finishForgets() {
    var run = HTTPRun.parse(Self.request, .requests)
    #expect(run.parser.headMemo.length > 0)
    run.finish()
    #expect(run.parser.headMemo.length == 0)
  }
}
