import Testing

@testable import NetMonitor

/// A framing event as the tests compare them; heads are kept aside in ``HTTPRun/heads``.
enum SeenEvent: Equatable, CustomStringConvertible {
  case started
  case head
  case complete(UInt64)
  case incomplete(UInt64)
  case switched
  case gaveUp

  var description: String {
    switch self {
    case .started: "started"
    case .head: "head"
    case .complete(let bytes): "complete(\(bytes))"
    case .incomplete(let bytes): "incomplete(\(bytes))"
    case .switched: "switched"
    case .gaveUp: "gaveUp"
    }
  }
}

/// Feeds one direction's parser and records what it reports.
struct HTTPRun {
  var kind: HTTPDirectionKind
  var parser = HTTPStreamParser()
  var events: [SeenEvent] = []
  var heads: [HTTPHead] = []

  init(_ kind: HTTPDirectionKind, expecting requests: [HTTPRequestKind] = []) {
    self.kind = kind
    for request in requests { parser.expectResponse(to: request) }
  }

  mutating func record(_ event: HTTPStreamEvent, _ head: HTTPHead) {
    switch event {
    case .messageStarted: events.append(.started)
    case .headComplete:
      events.append(.head)
      heads.append(head)
    case .messageComplete(let bytes): events.append(.complete(bytes))
    case .messageIncomplete(let bytes): events.append(.incomplete(bytes))
    case .switchedProtocols: events.append(.switched)
    case .gaveUp: events.append(.gaveUp)
    }
  }

  mutating func feed(_ bytes: ArraySlice<UInt8>) {
    var seen: [(HTTPStreamEvent, HTTPHead)] = []
    bytes.withUnsafeBytes { raw in
      parser.feed(raw, as: kind) { event, head in seen.append((event, head.pointee)) }
    }
    for (event, head) in seen { record(event, head) }
  }

  mutating func feed(_ text: String) { feed(ArraySlice(Array(text.utf8))) }

  /// Feeds `bytes` cut at `cuts` (ascending offsets).
  mutating func feed(_ bytes: [UInt8], cuts: [Int]) {
    var start = 0
    for cut in cuts + [bytes.count] {
      feed(bytes[start..<cut])
      start = cut
    }
  }

  mutating func finish() {
    var seen: [(HTTPStreamEvent, HTTPHead)] = []
    parser.finish { event, head in seen.append((event, head.pointee)) }
    for (event, head) in seen { record(event, head) }
  }

  /// Parses `text` in one piece.
  static func parse(
    _ text: String, _ kind: HTTPDirectionKind, expecting requests: [HTTPRequestKind] = [],
    finish: Bool = false
  ) -> HTTPRun {
    var run = HTTPRun(kind, expecting: requests)
    run.feed(text)
    if finish { run.finish() }
    return run
  }
}

/// Everything a head records, comparable: two parses agree when their summaries do.
struct HeadSummary: Equatable, CustomStringConvertible {
  var method, target: String
  var host: String?
  var status: UInt16
  var minorVersion: UInt8
  var contentLength: UInt64?
  var flags: [Bool]  // target and host truncated, Transfer-Encoding, chunked, close, keep-alive, upgrade
  var bodyFraming: HTTPBodyFraming
  var answeredRequestKind: HTTPRequestKind

  init(_ head: HTTPHead) {
    method = head.methodString
    target = head.targetString
    host = head.hostString
    status = head.status
    minorVersion = head.minorVersion
    contentLength = head.contentLength
    flags = [
      head.targetTruncated, head.hostTruncated, head.hasTransferEncoding, head.isChunked, head.connectionClose,
      head.connectionKeepAlive, head.connectionUpgrade,
    ]
    bodyFraming = head.bodyFraming
    answeredRequestKind = head.answeredRequestKind
  }

  var description: String {
    "\(method) \(target) \(host ?? "-") \(status) 1.\(minorVersion) \(contentLength.map(String.init) ?? "-") "
      + "\(flags.map { $0 ? "1" : "0" }.joined()) \(bodyFraming) \(answeredRequestKind)"
  }
}

extension HTTPRun {
  var summaries: [HeadSummary] { heads.map(HeadSummary.init) }
}

/// The usual three events of one complete message of `text`.
func message(_ text: String) -> [SeenEvent] {
  [.started, .head, .complete(UInt64(text.utf8.count))]
}

@Suite("HTTP test harness")
struct HTTPTestHarnessTests {
  @Test("cuts feed every byte exactly once")
  func cutsCoverStream() {
    let text = "GET / HTTP/1.1\r\n\r\n"
    var run = HTTPRun(.requests)
    run.feed(Array(text.utf8), cuts: [0, 3, 3, 10])
    #expect(run.events == message(text))
  }
}
