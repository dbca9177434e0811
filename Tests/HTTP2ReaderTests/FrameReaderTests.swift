import CHTTP2
import Testing
import TestSupport

/// The frame reader: each frame type's event, header blocks over padding, priority and
/// CONTINUATION, what breaks the framing, and the same events for any split of the bytes.
@Suite("HTTP/2 frame reader")
struct FrameReaderTests {
  /// The events (and block bytes, after a block) of reading `bytes` one call per chunk.
  static func events(_ bytes: [UInt8], preface: Bool = false, cuts: [Int] = []) -> (events: [ch2_event], blocks: [[UInt8]], status: ch2_status) {
    let reader = FrameReader(expectPreface: preface)
    var events: [ch2_event] = []
    var blocks: [[UInt8]] = []
    reader.feed(bytes, cuts: cuts) { event in
      events.append(event)
      if event.has_block != 0 { blocks.append(reader.block) }
    }
    return (events, blocks, reader.status)
  }

  /// `events`, checked to be the same whole, byte by byte and in a few random splits.
  static func checkedEvents(_ bytes: [UInt8], preface: Bool = false, sourceLocation: SourceLocation = #_sourceLocation)
    -> (events: [ch2_event], blocks: [[UInt8]], status: ch2_status)
  {
    let whole = events(bytes, preface: preface)
    var rng = SplitMix64(state: UInt64(bytes.count))
    let splits = [Array(0..<bytes.count)] + (0..<4).map { _ in (0..<bytes.count / 3).map { _ in Int(rng.next() % UInt64(bytes.count + 1)) } }
    for cuts in splits {
      let split = events(bytes, preface: preface, cuts: cuts)
      #expect(split.events.map(\.line) == whole.events.map(\.line), sourceLocation: sourceLocation)
      #expect(split.blocks == whole.blocks, sourceLocation: sourceLocation)
      #expect(split.status == whole.status, sourceLocation: sourceLocation)
    }
    return whole
  }

  static let block = hex("8286 8441 0f77 7777 2e65 7861 6d70 6c65 2e63 6f6d")  // RFC 7541 C.3.1

  @Test("DATA: counted, END_STREAM, padding and empty frames")
  func data() {
    let bytes = frame(CH2_DATA, stream: 1, Array(repeating: 7, count: 100))
      + frame(CH2_DATA, flags: CH2_FLAG_END_STREAM | CH2_FLAG_PADDED, stream: 3, [5] + Array(repeating: 1, count: 20))
      + frame(CH2_DATA, flags: CH2_FLAG_END_STREAM, stream: 5)
    let (events, blocks, status) = Self.checkedEvents(bytes)
    #expect(status == CH2_OK && blocks.isEmpty)
    #expect(events.map(\.type) == [0, 0, 0])
    #expect(events.map(\.frame_bytes) == [109, 30, 9])
    #expect(events.map(\.end_stream) == [0, 1, 1])
    #expect(events.map(\.stream_id) == [1, 3, 5])
    #expect(events.allSatisfy { $0.isFrame && $0.has_block == 0 && $0.header_table_size == UInt32.max })
  }

  @Test("HEADERS: the block, END_STREAM, the stream's reserved bit ignored")
  func headers() {
    let bytes = frame(CH2_HEADERS, flags: CH2_FLAG_END_HEADERS | CH2_FLAG_END_STREAM, stream: 0x8000_0001, Self.block)
      + frame(CH2_HEADERS, flags: CH2_FLAG_END_HEADERS, stream: 3, [])
    let (events, blocks, status) = Self.checkedEvents(bytes)
    #expect(status == CH2_OK)
    #expect(events.count == 2)
    #expect(events[0].type == UInt8(CH2_HEADERS) && events[0].has_block == 1 && events[0].end_stream == 1)
    #expect(events[0].stream_id == 1 && events[0].frame_bytes == UInt32(9 + Self.block.count))
    #expect(events[0].flags == UInt8(CH2_FLAG_END_HEADERS | CH2_FLAG_END_STREAM) && events[0].block_is_push == 0)
    #expect(events[1].has_block == 1 && events[1].end_stream == 0)
    #expect(blocks == [Self.block, []])
  }

  @Test("HEADERS with PADDED and PRIORITY: both stripped from the block")
  func headersPaddedWithPriority() {
    let payload = [3] + bigEndian(0x8000_0005) + [200] + Self.block + [0, 0, 0]
    let bytes = frame(CH2_HEADERS, flags: CH2_FLAG_END_HEADERS | CH2_FLAG_PADDED | CH2_FLAG_PRIORITY, stream: 7, payload)
      + frame(CH2_HEADERS, flags: CH2_FLAG_END_HEADERS | CH2_FLAG_PRIORITY, stream: 9, bigEndian(1) + [15] + Self.block)
      + frame(CH2_HEADERS, flags: CH2_FLAG_END_HEADERS | CH2_FLAG_PADDED, stream: 11, [0] + Self.block)
      + frame(CH2_HEADERS, flags: CH2_FLAG_END_HEADERS | CH2_FLAG_PADDED, stream: 13, [4, 0, 0, 0, 0])  // all padding
    let (events, blocks, status) = Self.checkedEvents(bytes)
    #expect(status == CH2_OK)
    #expect(blocks == [Self.block, Self.block, Self.block, []])
    // Padding up to the payload's end leaves an empty fragment.
    #expect(Self.events(frame(CH2_HEADERS, flags: 0x0c, stream: 1, [20] + Self.block)).blocks == [[]])
    #expect(events.map(\.stream_id) == [7, 9, 11, 13])
    #expect(events[0].frame_bytes == UInt32(9 + payload.count))
    let decoder = HPACKDecoder()
    let (decoded, fields) = decoder.decode(blocks[0])
    #expect(decoded == CH2_OK && fields.authorityText == "www.example.com")
  }

  @Test("a block over HEADERS and two CONTINUATIONs")
  func continuation() {
    let parts = [Array(Self.block[0..<5]), Array(Self.block[5..<6]), Array(Self.block[6...])]
    let bytes = frame(CH2_HEADERS, flags: CH2_FLAG_END_STREAM | CH2_FLAG_PADDED, stream: 5, [2] + parts[0] + [0, 0])
      + frame(CH2_CONTINUATION, stream: 5, parts[1])
      + frame(CH2_CONTINUATION, flags: CH2_FLAG_END_HEADERS, stream: 5, parts[2])
      + frame(CH2_DATA, stream: 5, [1])
    let (events, blocks, status) = Self.checkedEvents(bytes)
    #expect(status == CH2_OK)
    #expect(events.map(\.type) == [1, 9, 9, 0])
    #expect(events.map(\.has_block) == [0, 0, 1, 0])
    #expect(events.map(\.end_stream) == [1, 0, 1, 0])  // the HEADERS' END_STREAM, again when its block ends
    #expect(events.map(\.stream_id) == [5, 5, 5, 5])
    #expect(blocks == [Self.block])
    // The block is whole however the frames come: byte by byte included.
    #expect(readAndDecode(bytes, expectPreface: false, cuts: Array(0..<bytes.count)).contains {
      $0.hasPrefix("F ") && $0.contains(hexText(Array("www.example.com".utf8)))
    })
  }

  @Test("PUSH_PROMISE: the promised stream, padding, its block (over a CONTINUATION)")
  func pushPromise() {
    let request = hex("8287 85bf") // not decodable alone; only carried here
    let bytes = frame(CH2_PUSH_PROMISE, flags: CH2_FLAG_END_HEADERS | CH2_FLAG_PADDED, stream: 1, [1] + bigEndian(0x8000_0002) + request + [0])
      + frame(CH2_PUSH_PROMISE, stream: 1, bigEndian(4) + Self.block[0..<3])
      + frame(CH2_CONTINUATION, flags: CH2_FLAG_END_HEADERS, stream: 1, Array(Self.block[3...]))
    let (events, blocks, status) = Self.checkedEvents(bytes)
    #expect(status == CH2_OK)
    #expect(events.map(\.promised_stream_id) == [2, 4, 4])
    #expect(events.map(\.block_is_push) == [1, 0, 1])
    #expect(events.map(\.has_block) == [1, 0, 1])
    #expect(events.map(\.end_stream) == [0, 0, 0])
    #expect(blocks == [request, Self.block])
    #expect(Self.events(frame(CH2_PUSH_PROMISE, flags: CH2_FLAG_END_HEADERS, stream: 1, [0, 0, 0])).status == CH2_BAD_FRAME)
  }

  @Test("RST_STREAM, SETTINGS, GOAWAY, PING, WINDOW_UPDATE, PRIORITY and unknown types")
  func controlFrames() {
    let bytes = frame(CH2_RST_STREAM, stream: 3, bigEndian(8))
      + frame(CH2_SETTINGS, stream: 0, [0, 3, 0, 0, 0, 100, 0, 1, 0, 0, 0x20, 0, 0, 4, 0, 1, 0, 0])
      + frame(CH2_SETTINGS, stream: 0, [0, 1, 0, 0, 0x10, 0, 0, 1, 0, 0, 0, 0])  // the last one counts
      + frame(CH2_SETTINGS, stream: 0, [0, 2, 0, 0, 0, 0])
      + frame(CH2_SETTINGS, flags: CH2_FLAG_ACK, stream: 0)
      + frame(CH2_GOAWAY, stream: 0, bigEndian(0x8000_0007) + bigEndian(2) + Array("debug data".utf8))
      + frame(CH2_PING, stream: 0, Array(repeating: 1, count: 8))
      + frame(CH2_WINDOW_UPDATE, stream: 0, bigEndian(65535))
      + frame(CH2_PRIORITY, stream: 3, bigEndian(1) + [16])
      + frame(0xfa, flags: 0xff, stream: 9, Array(repeating: 2, count: 40))
    let (events, _, status) = Self.checkedEvents(bytes)
    #expect(status == CH2_OK)
    #expect(events.map(\.type) == [3, 4, 4, 4, 4, 7, 6, 8, 2, 0xfa])
    #expect(events[0].error_code == 8 && events[0].stream_id == 3)
    #expect(events[1].header_table_size == 8192)
    #expect(events[2].header_table_size == 0)
    #expect(events[3].header_table_size == UInt32.max)
    #expect(events[4].header_table_size == UInt32.max && events[4].flags == 1)
    #expect(events[5].last_stream_id == 7 && events[5].error_code == 2 && events[5].frame_bytes == 27)
    #expect(events[9].flags == 0xff && events[9].frame_bytes == 49 && events[9].end_stream == 0)
    #expect(events.allSatisfy { $0.isFrame && $0.has_block == 0 })
  }

  @Test("the client preface, when expected; ch2_is_preface_prefix")
  func preface() {
    let frames = frame(CH2_SETTINGS, stream: 0, [])
    let (events, _, status) = Self.checkedEvents(clientPreface + frames, preface: true)
    #expect(status == CH2_OK && events.count == 1 && events[0].type == UInt8(CH2_SETTINGS))
    var bad = clientPreface
    bad[20] = UInt8(ascii: "X")
    let broken = Self.checkedEvents(bad + frames, preface: true)
    #expect(broken.status == CH2_BAD_PREFACE && broken.events.count == 1 && broken.events[0].isError)
    // Without the preface expected, its bytes are a (bad) frame header: a 5263536-byte frame of type 0x20.
    #expect(Self.events(clientPreface, preface: false).events.isEmpty)
    #expect(Self.events(clientPreface + frames, preface: true).events.count == 1)
    #expect(ch2_is_preface_prefix(clientPreface, clientPreface.count) == 1)
    #expect(ch2_is_preface_prefix(clientPreface, 5) == 1)
    #expect(ch2_is_preface_prefix(clientPreface + frames, clientPreface.count + frames.count) == 1)
    #expect(ch2_is_preface_prefix(bad, bad.count) == 0)
    #expect(ch2_is_preface_prefix(Array("GET / HTTP/1.1".utf8), 14) == 0)
    #expect(ch2_is_preface_prefix(nil, 0) == 1)
  }

  @Test("what breaks the framing stops the reader: one ERROR, then everything read with NONE")
  func framingErrors() {
    let open = frame(CH2_HEADERS, stream: 1, Self.block)  // no END_HEADERS
    let cases: [(String, [UInt8], ch2_status)] = [
      ("a frame inside an open block", open + frame(CH2_DATA, stream: 1, [1]), CH2_BAD_FRAME),
      ("a PING inside an open block", open + frame(CH2_PING, stream: 0, Array(repeating: 0, count: 8)), CH2_BAD_FRAME),
      ("a CONTINUATION on another stream", open + frame(CH2_CONTINUATION, flags: 4, stream: 3, []), CH2_BAD_FRAME),
      ("a CONTINUATION with no block", frame(CH2_CONTINUATION, flags: 4, stream: 1, Self.block), CH2_BAD_FRAME),
      (
        "a CONTINUATION after a block ended",
        frame(CH2_HEADERS, flags: 4, stream: 1, Self.block) + frame(CH2_CONTINUATION, flags: 4, stream: 1, []), CH2_BAD_FRAME
      ),
      ("HEADERS on stream 0", frame(CH2_HEADERS, flags: 4, stream: 0, Self.block), CH2_BAD_FRAME),
      ("padding longer than the payload", frame(CH2_HEADERS, flags: 0x0c, stream: 1, [21] + Self.block), CH2_BAD_FRAME),
      ("padding longer than a PUSH_PROMISE", frame(CH2_PUSH_PROMISE, flags: 0x0c, stream: 1, [1, 0, 0, 0, 2]), CH2_BAD_FRAME),
      ("padding and priority longer than the payload", frame(CH2_HEADERS, flags: 0x2c, stream: 1, [1, 0, 0, 0, 0, 0]), CH2_BAD_FRAME),
      ("PADDED without a pad length", frame(CH2_HEADERS, flags: 0x0c, stream: 1, []), CH2_BAD_FRAME),
      ("PRIORITY cut short", frame(CH2_HEADERS, flags: 0x24, stream: 1, [0, 0, 0, 0]), CH2_BAD_FRAME),
      ("SETTINGS not a multiple of 6", frame(CH2_SETTINGS, stream: 0, [0, 1, 0, 0, 0, 0, 0]), CH2_BAD_FRAME),
      ("SETTINGS ACK with a payload", frame(CH2_SETTINGS, flags: 1, stream: 0, [0, 1, 0, 0, 0, 0]), CH2_BAD_FRAME),
      ("RST_STREAM of 3 bytes", frame(CH2_RST_STREAM, stream: 1, [0, 0, 8]), CH2_BAD_FRAME),
      ("GOAWAY of 7 bytes", frame(CH2_GOAWAY, stream: 0, [0, 0, 0, 1, 0, 0, 0]), CH2_BAD_FRAME),
      (
        "a block over CH2_BLOCK_BYTES in one frame",
        frame(CH2_HEADERS, flags: 4, stream: 1, Array(repeating: 0x82, count: Int(CH2_BLOCK_BYTES) + 1)), CH2_BLOCK_TOO_LARGE
      ),
      (
        "a block over CH2_BLOCK_BYTES over CONTINUATIONs",
        Self.blockOverContinuations(Int(CH2_BLOCK_BYTES) + 1), CH2_BLOCK_TOO_LARGE
      ),
    ]
    for (name, bytes, expected) in cases {
      let trailing = bytes + frame(CH2_DATA, stream: 1, [1, 2, 3])
      let (events, _, status) = Self.checkedEvents(trailing)
      #expect(status == expected, "\(name)")
      #expect(events.last?.isError == true && events.filter(\.isError).count == 1, "\(name)")
      // Stopped: more bytes are all read, with no event.
      let reader = FrameReader(expectPreface: false)
      var count = 0
      reader.feed(trailing + trailing) { _ in count += 1 }
      #expect(count == events.count, "\(name)")
    }
  }

  /// A header block of `size` bytes (indexed `:method: GET`s): a padded HEADERS with 10,000 of
  /// them, a CONTINUATION of 6,000, and one with the rest.
  static func blockOverContinuations(_ size: Int) -> [UInt8] {
    frame(CH2_HEADERS, flags: 0x08, stream: 1, [3] + Array(repeating: 0x82, count: 10000) + [0, 0, 0])
      + frame(CH2_CONTINUATION, stream: 1, Array(repeating: 0x82, count: 6000))
      + frame(CH2_CONTINUATION, flags: 4, stream: 1, Array(repeating: 0x82, count: size - 16000))
  }

  @Test("a block of exactly CH2_BLOCK_BYTES over CONTINUATIONs is read")
  func largestBlock() {
    let (events, blocks, status) = Self.events(Self.blockOverContinuations(Int(CH2_BLOCK_BYTES)))
    #expect(status == CH2_OK && events.count == 3 && blocks.first?.count == Int(CH2_BLOCK_BYTES))
    let (decoded, fields) = HPACKDecoder().decode(blocks[0])
    #expect(decoded == CH2_OK && fields.methodText == "GET")
  }

  @Test("a DATA frame of the largest length, 2^24 - 1, read in pieces")
  func largestFrame() {
    let length = (1 << 24) - 1
    let reader = FrameReader(expectPreface: false)
    var events: [ch2_event] = []
    reader.feed(Array(frame(CH2_DATA, flags: 1, stream: 1, [])[0..<9].enumerated().map { $0.offset < 3 ? 0xff : $0.element })) { events.append($0) }
    let zeros = [UInt8](repeating: 0, count: 1 << 16)
    for _ in 0..<(length >> 16) { reader.feed(zeros) { events.append($0) } }
    #expect(events.isEmpty)
    reader.feed(Array(zeros[0..<(length & 0xffff)]) + frame(CH2_PING, stream: 0, Array(repeating: 0, count: 8))) { events.append($0) }
    #expect(events.map(\.frame_bytes) == [UInt32(9 + length), 17])
    #expect(events.first?.end_stream == 1)
  }

  @Test("a realistic conversation (h2 client and server): the reference's events, for any split", arguments: [true, false])
  func conversation(client: Bool) {
    let bytes = client ? HTTP2Fixtures.clientStream : HTTP2Fixtures.serverStream
    let expected = (client ? HTTP2Fixtures.clientEvents : HTTP2Fixtures.serverEvents).map {
      $0.hasPrefix("F ") ? normalizedFieldsLine($0[...]) : $0
    }
    let whole = readAndDecode(bytes, expectPreface: client)
    #expect(whole == expected)
    #expect(readAndDecode(bytes, expectPreface: client, cuts: Array(0..<bytes.count)) == expected)
    var rng = SplitMix64(state: client ? 1 : 2)
    for round in 0..<40 {
      let count = round < 20 ? Int(rng.next() % 8) : Int(rng.next() % UInt64(bytes.count / 4))
      let cuts = (0..<count).map { _ in Int(rng.next() % UInt64(bytes.count)) }
      #expect(readAndDecode(bytes, expectPreface: client, cuts: cuts) == expected)
    }
    // What the monitor records of it.
    let paths = whole.filter { $0.hasPrefix("F ") }.compactMap { line -> String? in
      let path = line.split(separator: " ")[6]
      return path == "-" ? nil : String(decoding: hex(String(path.dropFirst())), as: UTF8.self)
    }
    if client {
      #expect(paths == [
        "/api/v1/users/12345/orders?limit=20&x=yz", "/helloworld.Greeter/SayHello", "/helloworld.Greeter/SayHello",
        "/index.html", "/api/v1/users/12345",
      ])
    } else {
      #expect(paths == ["/style.css"])
      #expect(whole.contains { $0.hasPrefix("F 200 5 ") })  // the trailers-only gRPC failure
      #expect(whole.contains { $0.hasPrefix("F 0 0 ") })  // trailers after DATA
      #expect(whole.contains { $0.hasPrefix("V 1 3 0 0 0 0 9 13 0 8 ") })  // RST_STREAM CANCEL
      #expect(whole.contains { $0.hasPrefix("V 1 7 0 0 0 0 0 20 0 0 9 ") })  // GOAWAY
    }
  }
}
