import CNetMonitor
import Testing

@testable import NetMonitor

/// The hooks read a chunked response body themselves (`cnm_chunked_read`, chunked_body.c) in the
/// Swift parser's states, so that ``HTTPStreamParser``, taking a connection over halfway through
/// one, goes on from where they were (`resume`, ExchangeReplay.swift). Whatever the bytes and
/// however they are cut, the two must end the body at the same byte or refuse it at the same one,
/// and a parser resumed from the hooks' state must give the events the parser gives alone: halfway,
/// or where the body ended (a request's, taken over before its answer).
@Suite("Chunked bodies the hooks read")
struct ChunkedBodyTests {
  static let head = Array("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n".utf8)

  static let bodies = [
    "5\r\nhello\r\n0\r\n\r\n",
    "3;x=1\r\nabc\r\n10\r\n0123456789abcdef\r\n0\r\nTrailer: t\r\n\r\n",
    "5 ; ext=\"a b\"\r\nhello\r\n1\r\n!\r\n0\r\nX: y\r\nZ: \t\r\n\r\n",
    "A\nabcdefghij\n0\n\n",  // bare LFs
    "00000F\r\n0123456789ABCDE\r\n0;last\r\n\r\n", "fFf\t\r\n" + String(repeating: "d", count: 0xFFF) + "\r\n0\r\n\r\n",
    "0\r\n\r\n",
  ]

  /// Bodies the Swift parser gives up on, and so must the hooks.
  static let refused = [
    "5\r\nhelloX\r\n0\r\n\r\n", "\r\n5\r\nhello\r\n0\r\n\r\n", "g\r\n", "5\rhello", "5;\u{01}\r\n",
    "1000000000000000\r\nx", "5 x\r\nhello\r\n", "0\r\n:bad\r\n\r\n", "0\r\nX: \u{7F}\r\n\r\n",
    "5\r\nhello\r\r\n0\r\n\r\n",
  ]

  enum Outcome: Equatable {
    case goesOn, ended(Int), refused
  }

  /// What the Swift parser makes of the head and then `body`: where the body ended in it, or that
  /// it gave up, or neither.
  static func swift(_ body: [UInt8]) -> Outcome {
    var run = HTTPRun(.responses)
    run.feed(ArraySlice(head + body))
    for event in run.events {
      if case .complete(let total) = event { return .ended(Int(total) - head.count) }
      if event == .gaveUp { return .refused }
    }
    return .goesOn
  }

  /// What the hooks make of `body` cut at `cuts` (ascending), and their state after.
  static func hooks(_ body: [UInt8], cuts: [Int]) -> (Outcome, cnm_chunked_body) {
    var state = cnm_chunked_body()
    var start = 0
    for cut in cuts + [body.count] {
      let before = state
      var used = 0
      let outcome = body[start..<cut].withUnsafeBufferPointer {
        cnm_chunked_read(&state, $0.baseAddress, $0.count, &used)
      }
      switch outcome {
      case CNM_CHUNKED_ENDED: return (.ended(start + used), state)
      case CNM_CHUNKED_REFUSED:
        #expect(withUnsafeBytes(of: before) { Array($0) } == withUnsafeBytes(of: state) { Array($0) }, "refused, changed")
        return (.refused, state)
      default: #expect(used == cut - start)
      }
      start = cut
    }
    #expect(state.bytes == UInt64(body.count))
    return (.goesOn, state)
  }

  /// The events of a parser given the head, then resumed from the hooks' state after `body`'s first
  /// `cut` bytes, then given the rest.
  static func resumed(_ body: [UInt8], at cut: Int) -> [SeenEvent]? {
    let (outcome, state) = hooks(Array(body[..<cut]), cuts: [])
    guard outcome == .goesOn else { return nil }
    var run = HTTPRun(.responses)
    run.feed(ArraySlice(head))
    run.parser.resume(state)
    run.feed(body[cut...])
    return run.events
  }

  /// The events of a parser given the head, then resumed from the hooks' state where the body
  /// ended, given its last byte (an LF, as a takeover gives it), then the rest.
  static func resumedAtEnd(_ body: [UInt8]) -> [SeenEvent]? {
    let (outcome, state) = hooks(body, cuts: [])
    guard case .ended(let end) = outcome else { return nil }
    #expect(state.ended == 1 && state.bytes == UInt64(end))
    var run = HTTPRun(.responses)
    run.feed(ArraySlice(head))
    run.parser.resume(state)
    run.feed(ArraySlice([UInt8(ascii: "\n")]) + body[end...])
    return run.events
  }

  @Test("bodies as servers send them: ended where the Swift parser ends them, however cut, and resumed anywhere")
  func wellFormed() {
    for text in Self.bodies {
      let body = Array((text + "HTTP/1.1 200 OK\r\n").utf8)  // and the next response's first bytes
      let reference = Self.swift(body)
      #expect(reference == .ended(text.utf8.count), "\(text.debugDescription)")
      var whole = HTTPRun(.responses)
      whole.feed(ArraySlice(Self.head + body))
      for cut in 0...body.count {
        #expect(Self.hooks(body, cuts: [cut]).0 == reference, "\(text.debugDescription) cut at \(cut)")
        if let events = Self.resumed(body, at: cut) {
          #expect(events == whole.events, "\(text.debugDescription) resumed at \(cut)")
        }
      }
      #expect(Self.hooks(body, cuts: Array(1..<body.count)).0 == reference, "\(text.debugDescription) a byte at a time")
      #expect(Self.resumedAtEnd(body) == whole.events, "\(text.debugDescription) resumed at its end")
    }
  }

  @Test("bodies the Swift parser gives up on, the hooks refuse", arguments: Self.refused)
  func malformed(text: String) {
    let body = Array(text.utf8)
    #expect(Self.swift(body) == .refused)
    #expect(Self.hooks(body, cuts: []).0 == .refused)
    #expect(Self.hooks(body, cuts: Array(1..<body.count)).0 == .refused)
  }

  @Test("bytes not seen (sendfile) are taken as a chunk's data only")
  func unseen() {
    var state = cnm_chunked_body()
    var used = 0
    #expect(cnm_chunked_read(&state, nil, 1, &used) == CNM_CHUNKED_REFUSED)
    let line = Array("10\r\n".utf8)
    #expect(cnm_chunked_read(&state, line, line.count, &used) == CNM_CHUNKED_GOES_ON)
    #expect(cnm_chunked_read(&state, nil, 16, &used) == CNM_CHUNKED_GOES_ON && state.remaining == 0)
    #expect(cnm_chunked_read(&state, nil, 1, &used) == CNM_CHUNKED_REFUSED, "the CRLF after the data is framing")
    #expect(state.bytes == 20 && state.phase == UInt8(CNM_CHUNKED_DATA_END))
  }

  @Test("20,000 mutated bodies cut at random: the same outcome both ways, and the same events resumed")
  func mutated() {
    var mutations = SimpleHeadsTests.Mutations(state: 0xC4C4)
    let telling = Array("0123456789abcdefgABCDEF;= \t\r\n:xX".utf8) + [0x01, 0x7F, 0x80]
    var outcomes = (ended: 0, refused: 0, goesOn: 0)
    for round in 0..<20_000 {
      var body = Array(Self.bodies[round % Self.bodies.count].utf8)
      for _ in 0...(mutations.next() % 3) where !body.isEmpty {
        let at = Int(mutations.next() % UInt64(body.count))
        let byte = telling[Int(mutations.next() % UInt64(telling.count))]
        switch mutations.next() % 3 {
        case 0: body[at] = byte
        case 1: body.insert(byte, at: at)
        default: body.remove(at: at)
        }
      }
      let reference = Self.swift(body)
      let cut = body.isEmpty ? 0 : Int(mutations.next() % UInt64(body.count + 1))
      let text = String(decoding: body, as: UTF8.self).debugDescription
      #expect(Self.hooks(body, cuts: [cut]).0 == reference, "\(text) cut at \(cut)")
      switch reference {
      case .ended: outcomes.ended += 1
      case .refused: outcomes.refused += 1
      case .goesOn: outcomes.goesOn += 1
      }
      var whole = HTTPRun(.responses)
      whole.feed(ArraySlice(Self.head + body))
      if let events = Self.resumed(body, at: cut) {
        #expect(events == whole.events, "\(text) resumed at \(cut)")
      }
      if let events = Self.resumedAtEnd(body) {
        #expect(events == whole.events, "\(text) resumed at its end")
      }
    }
    // Not vacuous: each outcome is common.
    #expect(outcomes.ended > 2_000 && outcomes.refused > 2_000 && outcomes.goesOn > 500, "\(outcomes)")
  }
}
