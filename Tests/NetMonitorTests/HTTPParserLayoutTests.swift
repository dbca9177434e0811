import Testing

@testable import NetMonitor

/// The parser lives in preallocated, zero-filled shared memory: it must be plain data, and zero bytes
/// must be its initial state.
@Suite("HTTP parser layout")
struct HTTPParserLayoutTests {
  @Test("the parser, the head and the events are plain data")
  func plainData() {
    #expect(_isPOD(HTTPStreamParser.self))
    #expect(_isPOD(HTTPHead.self))
    #expect(_isPOD(HTTPStreamEvent.self))
    #expect(_isPOD(HTTPDirectionKind.self) && _isPOD(HTTPRequestKind.self) && _isPOD(HTTPBodyFraming.self))
  }

  @Test("init() is all zero bytes")
  func initIsZero() {
    let parser = HTTPStreamParser()
    #expect(withUnsafeBytes(of: parser) { $0.allSatisfy { $0 == 0 } })
    let head = HTTPHead()
    #expect(withUnsafeBytes(of: head) { $0.allSatisfy { $0 == 0 } })
  }

  @Test("init() is all zero bytes even over dirty memory (no padding left undefined)")
  func initOverDirtyMemory() {
    let size = MemoryLayout<HTTPStreamParser>.size
    let memory = UnsafeMutableRawPointer.allocate(
      byteCount: MemoryLayout<HTTPStreamParser>.stride, alignment: MemoryLayout<HTTPStreamParser>.alignment)
    defer { memory.deallocate() }
    memory.initializeMemory(as: UInt8.self, repeating: 0xA5, count: MemoryLayout<HTTPStreamParser>.stride)
    memory.bindMemory(to: HTTPStreamParser.self, capacity: 1).initialize(to: HTTPStreamParser())
    let bytes = UnsafeRawBufferPointer(start: memory, count: size)
    #expect(bytes.allSatisfy { $0 == 0 })
  }

  @Test("a parser in zero-filled memory parses like a fresh one, in place")
  func zeroFilledMemoryParses() {
    let stride = MemoryLayout<HTTPStreamParser>.stride
    let memory = UnsafeMutableRawPointer.allocate(
      byteCount: stride * 4, alignment: MemoryLayout<HTTPStreamParser>.alignment)
    defer { memory.deallocate() }
    memory.initializeMemory(as: UInt8.self, repeating: 0, count: stride * 4)
    let slots = memory.assumingMemoryBound(to: HTTPStreamParser.self)
    let text = "GET /x HTTP/1.1\r\nHost: zero\r\nContent-Length: 2\r\n\r\nhi"
    var events: [SeenEvent] = []
    var hosts: [String?] = []
    Array(text.utf8).withUnsafeBytes { raw in
      slots[2].feed(raw, as: .requests) { event, head in
        switch event {
        case .messageStarted: events.append(.started)
        case .headComplete:
          events.append(.head)
          hosts.append(head.pointee.hostString)
        case .messageComplete(let bytes): events.append(.complete(bytes))
        default: events.append(.gaveUp)
        }
      }
    }
    #expect(events == message(text))
    #expect(hosts == ["zero"])
    #expect(slots[2].isBetweenMessages && !slots[2].hasGivenUp)
  }

  @Test("the state stays small")
  func size() {
    // The head (810 bytes) and the bytes it was parsed from (HTTPHeadMemo, 512) are most of it.
    #expect(MemoryLayout<HTTPStreamParser>.size <= 1408)
    #expect(MemoryLayout<HTTPHeadMemo>.size == 512)
    #expect(MemoryLayout<HTTPHead>.size == 810)
  }
}
