import Testing
import TestSupport

@testable import NetMonitor

/// The same byte stream, cut anywhere, must give the same events and byte counts.
@Suite("HTTP fragmentation")
struct HTTPFragmentationTests {
  static let requestStream = Array(
    ("\r\nGET /a?b=c HTTP/1.1\r\nHost: example.com\r\nUser-Agent: t\r\n\r\n"
      + "POST /form HTTP/1.1\r\nhost: x\r\nContent-Length: 13\r\n\r\nname=a&b=c&d="
      + "PUT /chunks HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
      + "3;x=1\r\nabc\r\n10\r\n0123456789abcdef\r\n0\r\nTrailer: t\r\n\r\n"
      + "HEAD /h HTTP/1.0\nConnection: keep-alive\n\n"
      + "DELETE /d HTTP/1.1\r\nContent-Length: 0\r\n\r\n").utf8)

  static let responseStream = Array(
    ("HTTP/1.1 100 Continue\r\n\r\n"
      + "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n0123456789"
      + "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
      + "5 ; ext\r\nhello\r\n1\r\n!\r\n0\r\nX: y\r\n\r\n"
      + "HTTP/1.1 200 OK\r\nContent-Length: 99\r\n\r\n"  // answers HEAD
      + "HTTP/1.1 304 Not Modified\r\nETag: \"x\"\r\n\r\n"
      + "HTTP/1.0 200 OK\r\n\r\nuntil the connection closes").utf8)

  static let responseKinds: [HTTPRequestKind] = [.ordinary, .ordinary, .head, .ordinary, .ordinary]

  static func run(_ kind: HTTPDirectionKind, _ bytes: [UInt8], cuts: [Int]) -> HTTPRun {
    var run = HTTPRun(kind, expecting: kind == .responses ? responseKinds : [])
    run.feed(bytes, cuts: cuts)
    run.finish()
    return run
  }

  static func reference(_ kind: HTTPDirectionKind, _ bytes: [UInt8]) -> HTTPRun {
    run(kind, bytes, cuts: [])
  }

  @Test("the reference parses: five requests, six responses, bytes add up")
  func references() {
    let requests = Self.reference(.requests, Self.requestStream)
    #expect(requests.heads.count == 5 && !requests.events.contains(.gaveUp))
    let responses = Self.reference(.responses, Self.responseStream)
    #expect(responses.heads.map(\.status) == [100, 200, 200, 200, 304, 200])
    #expect(!responses.events.contains(.gaveUp))
    #expect(total(responses.events) == UInt64(Self.responseStream.count))
    // The two leading blank bytes belong to no request.
    #expect(total(requests.events) == UInt64(Self.requestStream.count - 2))
  }

  @Test("cut at every position", arguments: [HTTPDirectionKind.requests, .responses])
  func everySplit(kind: HTTPDirectionKind) {
    let bytes = kind == .requests ? Self.requestStream : Self.responseStream
    let reference = Self.reference(kind, bytes)
    for cut in 0...bytes.count {
      let run = Self.run(kind, bytes, cuts: [cut])
      #expect(run.events == reference.events, "cut at \(cut)")
      #expect(run.heads.map(\.targetString) == reference.heads.map(\.targetString))
      #expect(run.heads.map(\.hostString) == reference.heads.map(\.hostString))
    }
  }

  @Test("one byte at a time", arguments: [HTTPDirectionKind.requests, .responses])
  func byteAtATime(kind: HTTPDirectionKind) {
    let bytes = kind == .requests ? Self.requestStream : Self.responseStream
    let run = Self.run(kind, bytes, cuts: Array(1..<bytes.count))
    let reference = Self.reference(kind, bytes)
    #expect(run.events == reference.events)
    #expect(run.heads.map(\.contentLength) == reference.heads.map(\.contentLength))
    #expect(run.heads.map(\.bodyFraming) == reference.heads.map(\.bodyFraming))
  }

  @Test("random cuts into many pieces", arguments: [HTTPDirectionKind.requests, .responses])
  func randomCuts(kind: HTTPDirectionKind) {
    let bytes = kind == .requests ? Self.requestStream : Self.responseStream
    let reference = Self.reference(kind, bytes)
    var random = SplitMix64(state: 42)
    for _ in 0..<500 {
      let pieces = Int.random(in: 2...12, using: &random)
      let cuts = (0..<pieces).map { _ in Int.random(in: 0...bytes.count, using: &random) }.sorted()
      let run = Self.run(kind, bytes, cuts: cuts)
      #expect(run.events == reference.events, "cuts \(cuts)")
    }
  }
}

/// The sum of the byte counts of complete and incomplete messages.
func total(_ events: [SeenEvent]) -> UInt64 {
  events.reduce(0) { sum, event in
    switch event {
    case .complete(let bytes), .incomplete(let bytes): sum + bytes
    default: sum
    }
  }
}
