import Testing
import TestSupport

@testable import NetMonitor

/// A ring's consumer counts an http record without decoding it when its request has the bytes of
/// the last one it decoded: the comparison must see every byte up to each text's length, and no
/// byte past them (a slot is not cleared between records: what lies past the packed text is an
/// older record's).
@Suite("HTTP request bytes")
struct HTTPRequestBytesTests {
  /// An http record in slot-size memory, its texts written over `garbage`.
  final class Slot {
    let record: UnsafeMutablePointer<RawRecord>

    init() {
      let raw = UnsafeMutableRawPointer.allocate(byteCount: RawRecord.slotSize, alignment: 16)
      record = raw.bindMemory(to: RawRecord.self, capacity: 1)
      record.initialize(to: RawRecord())
      record.pointee.kind = RawRecord.Kind.http
    }

    deinit { record.deallocate() }

    var view: HTTPRecordView { HTTPRecordView(UnsafePointer(record)) }

    /// An HTTP/2 request whose target is kept as its `:path`'s Huffman code (`huffman`), or an
    /// HTTP/1.1 one.
    func write(
      method: [UInt8], target: [UInt8], host: [UInt8], tls: Bool = false, garbage: UInt8 = 0, huffman: Bool = false
    ) {
      record.pointee.httpProtocol = huffman ? RawRecord.HTTPVersion.h2 : RawRecord.HTTPVersion.http11
      record.pointee.targetIsHuffmanCode = huffman
      let head = record.pointer(to: \.httpRequest)!
      withUnsafeMutableBytes(of: &head.pointee.text) { text in
        _ = text.initializeMemory(as: UInt8.self, repeating: garbage)
        text.copyBytes(from: method + target + host)
      }
      head.pointee.methodLength = UInt8(method.count)
      head.pointee.targetLength = UInt16(target.count)
      head.pointee.hostLength = UInt16(host.count)
      record.pointee.core.isTLS = tls ? 1 : 0
    }
  }

  static let get = Array("GET".utf8)
  static let host = Array("localhost:8080".utf8)

  @Test("nothing captured: no record matches, not even an empty request")
  func empty() {
    let slot = Slot()
    slot.write(method: [], target: [], host: [])
    var bytes = HTTPRequestBytes()
    #expect(!bytes.matches(slot.view))
    bytes.capture(slot.view)
    #expect(bytes.matches(slot.view))
  }

  @Test("targets of 0 to 40 bytes and the full 512: equal bytes match, whatever lies past the length")
  func lengths() {
    let slot = Slot()
    for length in Array(0...40) + [HTTPHead.targetCapacity] {
      let target = (0..<length).map { UInt8(truncatingIfNeeded: 0x21 + $0 % 90) }
      slot.write(method: Self.get, target: target, host: Self.host, garbage: 0xAA)
      var bytes = HTTPRequestBytes()
      bytes.capture(slot.view)
      slot.write(method: Self.get, target: target, host: Self.host, garbage: 0x55)
      #expect(bytes.matches(slot.view), "length \(length)")
      // One byte more or less is another request.
      if length < HTTPHead.targetCapacity {
        slot.write(method: Self.get, target: target + [0x55], host: Self.host, garbage: 0x55)
        #expect(!bytes.matches(slot.view), "length \(length) + 1")
      }
      if length > 0 {
        slot.write(method: Self.get, target: Array(target.dropLast()), host: Self.host, garbage: target.last!)
        #expect(!bytes.matches(slot.view), "length \(length) - 1")
      }
    }
  }

  @Test("a difference in any byte of the method, the target or the Host, or in the scheme, is another request")
  func everyByte() {
    let slot = Slot()
    let method = Array("OPTIONS".utf8)
    let target = Array("/api/v1/users/42?fields=name,email".utf8)
    let host = Array("api.example.com:8443".utf8)
    slot.write(method: method, target: target, host: host)
    var bytes = HTTPRequestBytes()
    bytes.capture(slot.view)
    #expect(bytes.matches(slot.view))
    for index in method.indices {
      var other = method
      other[index] ^= 0x20
      slot.write(method: other, target: target, host: host)
      #expect(!bytes.matches(slot.view), "method byte \(index)")
    }
    for index in target.indices {
      var other = target
      other[index] ^= 0x01
      slot.write(method: method, target: other, host: host)
      #expect(!bytes.matches(slot.view), "target byte \(index)")
    }
    for index in host.indices {
      var other = host
      other[index] ^= 0x80
      slot.write(method: method, target: target, host: other)
      #expect(!bytes.matches(slot.view), "host byte \(index)")
    }
    slot.write(method: method, target: target, host: [])
    #expect(!bytes.matches(slot.view), "no Host")
    slot.write(method: method, target: target, host: host, tls: true)
    #expect(!bytes.matches(slot.view), "https")
    // The same three texts moved between the fields are another request too.
    slot.write(method: method, target: host, host: target)
    #expect(!bytes.matches(slot.view), "texts swapped")
    slot.write(method: method, target: target, host: host)
    #expect(bytes.matches(slot.view))
  }

  @Test("an HTTP/2 :path kept as its Huffman code: read decoded, and matched as a code, never as text")
  func huffmanTargets() throws {
    let slot = Slot()
    let path = Array("/v/017.bin?page=17&sort=name".utf8)
    let code = HuffmanReference.encode(path)
    slot.write(method: Self.get, target: code, host: Self.host, huffman: true)
    slot.view.withRequestText { method, target, host in
      #expect(Array(method) == Self.get && Array(target) == path && Array(host) == Self.host)
      #expect(method.baseAddress! + method.count == target.baseAddress!, "the method and the target, one run")
    }
    var cache = RecordTextCache()
    let decoded = try #require(RawRecord.transaction(at: UnsafeRawPointer(slot.record), process: "p", cache: &cache))
    guard case .http(let http) = decoded else { return #expect(Bool(false), "an http record") }
    #expect(http.target == String(decoding: path, as: UTF8.self) && http.method == "GET")
    // The same bytes as text are another request; the same code again is the same one.
    var bytes = HTTPRequestBytes()
    bytes.capture(slot.view)
    slot.write(method: Self.get, target: code, host: Self.host)
    #expect(!bytes.matches(slot.view))
    slot.write(method: Self.get, target: code, host: Self.host, garbage: 0x55, huffman: true)
    #expect(bytes.matches(slot.view))
    // A code that is not valid (EOS inside it) reads as an empty target; one decoded beyond the
    // target's capacity is cut there.
    slot.write(method: Self.get, target: [0x1f, 0xff, 0xff, 0xff, 0xff], host: Self.host, huffman: true)
    slot.view.withRequestText { _, target, _ in #expect(target.isEmpty) }
    let long = [UInt8](repeating: UInt8(ascii: "a"), count: 700)
    slot.write(method: Self.get, target: HuffmanReference.encode(long), host: Self.host, huffman: true)
    slot.view.withRequestText { _, target, _ in #expect(Array(target) == Array(long.prefix(HTTPHead.targetCapacity))) }
  }

  @Test("the view's numbers are the decoded record's")
  func numbers() throws {
    let slot = Slot()
    slot.write(method: Self.get, target: Array("/".utf8), host: Self.host)
    slot.record.pointee.startUnixNanoseconds = 1_700_000_000_123_456_789
    slot.record.pointee.httpRequestBytes = 78
    slot.record.pointee.httpResponseBytes = 1_260
    var cache = RecordTextCache()
    for (duration, status) in [(UInt64(1), UInt16(200)), (123_456_789, 503), (0, 0), (UInt64(1) << 52 + 1, 404)] {
      slot.record.pointee.durationNanoseconds = duration
      slot.record.pointee.httpStatus = status
      let view = slot.view
      var decoded: HTTPRecord?
      _ = RawRecord.withTransaction(at: UnsafeRawPointer(slot.record), process: "p", cache: &cache) {
        if case .http(let http) = $0 { decoded = http }
      }
      let http = try #require(decoded)
      #expect(view.startUnixNs == http.startUnixNs && view.durationMs == http.durationMs)
      #expect(view.status == http.status && view.requestBytes == http.requestBytes)
      #expect(view.responseBytes == http.responseBytes)
    }
  }
}
