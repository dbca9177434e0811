import CHTTP2
import Testing
import TestSupport

/// What spares decoding again: a block replayed whole, the fields a block begins with alike
/// replayed, and the memo of Huffman strings — each checked against decoding every block.
extension HPACKEdgeTests {
  @Test("a block that comes again is replayed: the same fields and table as decoding it", arguments: [4096, 1024, 300, 120])
  func replayedBlock(tableSize: Int) {
    func huffman(_ text: String) -> [UInt8] { Self.literal(HuffmanReference.encode(Array(text.utf8)), huffman: true) }
    // nginx's response: :status 200, server, date, content-type, content-length, last-modified with
    // incremental indexing (static names), etag without indexing (a new name); and gRPC's fields.
    let response: [UInt8] =
      [0x88, 0x76] + huffman("nginx") + [0x61] + huffman("Thu, 26 Nov 2026 01:20:00 GMT") + [0x5f]
      + huffman("application/grpc") + [0x5c] + Self.literal("1024") + [0x6c] + huffman("Wed, 25 Nov 2026 23:04:10 GMT")
      + [0x00] + huffman("etag") + huffman("\"6926539e-400\"") + [0x00] + Self.literal("grpc-message") + Self.literal("fine")
      + [0x40] + huffman("grpc-status") + Self.literal("0")
    let named: [UInt8] = [0xbe, 0x40] + Self.literal("x-c") + Self.literal("v")  // names the table's newest entry
    let reading: [UInt8] = [0x82, 0x86, 0xbf, 0xbe]  // names entries, inserts none: replayed too
    let large: [UInt8] = [0x44] + Self.literal("/" + String(repeating: "l", count: 40))  // over half of 120
    let sequence = Array(repeating: response, count: 20) + Array(repeating: named, count: 3)
      + Array(repeating: response, count: 4) + Array(repeating: large, count: 3) + Array(repeating: response, count: 3)
      + Array(repeating: reading, count: 3) + [named] + Array(repeating: reading, count: 3)
    // The reference decodes every block: every other one has a field that changes nothing appended,
    // so that no block comes right after itself.
    let padding: [UInt8] = [0x00] + Self.literal("x-pad") + Self.literal("1")
    let replayed = HPACKDecoder(keepsTable: true), decoded = HPACKDecoder(keepsTable: true)
    let update = Self.integer(tableSize, prefix: 5, first: 0x20)
    #expect(replayed.decode(update).status == CH2_OK && decoded.decode(update).status == CH2_OK)
    for (index, block) in sequence.enumerated() {
      let (status, fields) = replayed.decode(block)
      let (reference, referenceFields) = decoded.decode(index % 2 == 0 ? block + padding : block)
      #expect(status == CH2_OK && reference == CH2_OK, "block \(index)")
      #expect(fields.status == referenceFields.status && fields.grpc_status == referenceFields.grpc_status)
      #expect(fields.contentTypeText == referenceFields.contentTypeText && fields.pathText == referenceFields.pathText)
      #expect(fields.grpcMessageText == referenceFields.grpcMessageText && fields.authorityText == referenceFields.authorityText)
      #expect(replayed.entries.map(\.name) == decoded.entries.map(\.name), "block \(index)")
      #expect(replayed.entries.map(\.value) == decoded.entries.map(\.value), "block \(index)")
      #expect(replayed.size == decoded.size)
      // The response's entries (336) are kept to replay when they take at most half the table.
      if block == response { #expect((replayed.state.pointee.replay_length != 0) == (tableSize >= 672)) }
      // Replayed over and over, the response fills the table with its own entries: from then on
      // (the 13th at 4096, the 4th at 1024) a replay leaves the table as it is.
      if index == 19 { #expect((replayed.state.pointee.replay_steady != 0) == (tableSize >= 672)) }
    }
    #expect(decoded.decode(response).fields.grpc_status == 0)
  }

  @Test("a block that begins like the last one replays those fields: the same fields and table as decoding it",
        arguments: [4096, 1024, 300, 120])
  func replayedPrefix(tableSize: Int) {
    func huffman(_ text: String) -> [UInt8] { Self.literal(HuffmanReference.encode(Array(text.utf8)), huffman: true) }
    // nginx's responses of other lengths and files, the date ticking; a gRPC response whose
    // trailers-only fields follow its :status; blocks that name the table's entries midway or
    // first; a size update; a request whose :path alone differs; an entry over half of 120.
    func response(length: Int, second: Int, file: Int) -> [UInt8] {
      [0x88, 0x76] + huffman("nginx/1.22.1") + [0x61] + huffman("Fri, 27 Nov 2026 02:48:\(10 + second) GMT") + [0x5f]
        + huffman("application/octet-stream") + [0x5c] + Self.literal(String(length)) + [0x6c]
        + huffman("Wed, 25 Nov 2026 23:04:\(10 + file) GMT") + [0x00] + huffman("etag")
        + huffman("\"6926539e-\(length)\"") + [0x00] + huffman("accept-ranges") + huffman("bytes")
    }
    func grpc(_ status: Int, _ message: String) -> [UInt8] {
      [0x88, 0x5f] + huffman("application/grpc") + [0x40] + huffman("grpc-status") + Self.literal(String(status))
        + [0x40] + Self.literal("grpc-message") + Self.literal(message)
    }
    func request(_ path: String) -> [UInt8] {
      [0x82, 0x86, 0x41] + huffman("127.0.0.1:8443") + [0x04] + huffman(path) + [0x7a] + huffman("h2load nghttp2/1.52.0")
    }
    let named: [UInt8] = [0x88, 0x76] + huffman("nginx/1.22.1") + [0xbe, 0x40] + Self.literal("x-c") + Self.literal("v")
    let updateSize = Self.integer(tableSize / 2, prefix: 5, first: 0x20), updated = [0x88, 0x76] + huffman("nginx/1.22.1")
    let update = updateSize + updated
    let large: [UInt8] = [0x88, 0x44] + Self.literal("/" + String(repeating: "l", count: 40))
    var sequence: [[UInt8]] = []
    for i in 0..<24 { sequence.append(response(length: 512 + 700 * (i % 5), second: i / 6, file: i % 3)) }
    sequence += [grpc(0, "ok"), grpc(0, "ok"), grpc(5, "not found"), grpc(14, "unavailable"), named, named]
    sequence += [response(length: 1, second: 0, file: 0), update, response(length: 2, second: 0, file: 0)]
    sequence += [large, large, response(length: 3, second: 1, file: 1), named, response(length: 4, second: 1, file: 1)]
    sequence += (0..<8).map { request("/v/00\($0).bin?page=\($0 * 7)") }
    // The reference decodes every block whole: a field that changes nothing, first and different
    // each time, leaves no field to replay.
    func padded(_ block: [UInt8], _ index: Int) -> [UInt8] {
      [0x00] + Self.literal("x-pad") + Self.literal(String(index % 2)) + block
    }
    let replayed = HPACKDecoder(keepsTable: true), decoded = HPACKDecoder(keepsTable: true)
    let resize = Self.integer(tableSize, prefix: 5, first: 0x20)
    #expect(replayed.decode(resize).status == CH2_OK && decoded.decode(resize).status == CH2_OK)
    for (index, block) in sequence.enumerated() {
      // A size update must come first: the reference's goes before its padding.
      let reference = block == update ? updateSize + padded(updated, index) : padded(block, index)
      let (status, fields) = replayed.decode(block)
      let (referenceStatus, referenceFields) = decoded.decode(reference)
      #expect(status == CH2_OK && referenceStatus == CH2_OK, "block \(index)")
      #expect(fields.line == referenceFields.line, "block \(index)")
      #expect(replayed.entries.map(\.name) == decoded.entries.map(\.name), "block \(index)")
      #expect(replayed.entries.map(\.value) == decoded.entries.map(\.value), "block \(index)")
      #expect(replayed.size == decoded.size, "block \(index)")
    }
    #expect(decoded.state.pointee.prefix_fields_replayed == 0)
    // nginx's :status, server, date and content-type (or fewer as the date ticks), when its
    // entries take at most half the table.
    if tableSize >= 1024 { #expect(replayed.state.pointee.prefix_fields_replayed >= 60) }
  }

  @Test("random blocks that begin like the one before: replayed or decoded, the same fields, tables and errors")
  func replayedRandomPrefixes() {
    var rng = SplitMix64(state: 23)
    func pick<T>(_ items: [T]) -> T { items[Int(rng.next() % UInt64(items.count))] }
    let names = [":path", ":authority", "content-type", "grpc-status", "grpc-message", "date", "x-id", "server"]
    let values = ["/", "/a?b=1", "127.0.0.1:8443", "application/grpc", "0", "14", "fine", "Fri, 27 Nov 2026 02:48:33 GMT", "v"]
    func string(_ text: String) -> [UInt8] {
      rng.next() % 2 == 0 ? Self.literal(text) : Self.literal(HuffmanReference.encode(Array(text.utf8)), huffman: true)
    }
    // A field: indexed (static, or the dynamic table's newest few: possibly past its end, an
    // error both decoders must agree on), or a literal with, without or never indexed, its name
    // indexed (static or dynamic) or literal.
    func field() -> [UInt8] {
      switch rng.next() % 6 {
      case 0: return [0x80 | UInt8(1 + rng.next() % 61)]
      case 1: return [0x80 | UInt8(62 + rng.next() % 4)]
      default:
        let (prefix, first): (Int, UInt8) = pick([(6, 0x40), (6, 0x40), (4, 0x00), (4, 0x10)])
        let name = pick([0, 0, 1, 4, 8, 31, 33, 54, 62, 63])
        let head = Self.integer(name, prefix: prefix, first: first)
        return (name == 0 ? head + string(pick(names)) : head) + string(pick(values))
      }
    }
    func padded(_ fields: [[UInt8]], _ index: Int, update: [UInt8]) -> [UInt8] {
      update + [0x00] + Self.literal("x-pad") + Self.literal(String(index % 2)) + fields.joined()
    }
    var replayed = HPACKDecoder(keepsTable: true), decoded = HPACKDecoder(keepsTable: true)
    var last: [[UInt8]] = []
    var errors = 0
    for index in 0..<4000 {
      // Keep a random number of the last block's fields, then add new ones.
      var fields = Array(last.prefix(Int(rng.next() % UInt64(last.count + 1))))
      for _ in 0..<(rng.next() % 6) { fields.append(field()) }
      let update = rng.next() % 40 == 0 ? Self.integer(pick([0, 120, 256, 1024, 4096]), prefix: 5, first: 0x20) : []
      let (status, got) = replayed.decode(update + fields.joined())
      let (referenceStatus, expected) = decoded.decode(padded(fields, index, update: update))
      #expect(status == referenceStatus, "block \(index)")
      if status != CH2_OK {
        errors += 1
        replayed = HPACKDecoder(keepsTable: true)
        decoded = HPACKDecoder(keepsTable: true)
        last = []
        continue
      }
      #expect(got.line == expected.line, "block \(index)")
      #expect(replayed.rawEntries.map(\.name) == decoded.rawEntries.map(\.name), "block \(index)")
      #expect(replayed.rawEntries.map(\.value) == decoded.rawEntries.map(\.value), "block \(index)")
      #expect(replayed.size == decoded.size && replayed.maxSize == decoded.maxSize, "block \(index)")
      last = fields
    }
    #expect(decoded.state.pointee.prefix_fields_replayed == 0)
    #expect(replayed.state.pointee.prefix_fields_replayed > 0 && errors < 1000)
  }

  @Test("the Huffman strings a server repeats stay in the memo while its responses differ")
  func memoKeepsRepeatedStrings() {
    // nginx's responses as it sent them here over h2c: server, date, content-type, content-length
    // and last-modified with incremental indexing. The length changes with each file, so no
    // block is replayed and every string goes through the memo. A hash of three of a string's
    // bytes put this server, date and last-modified in one two-way set, where each evicted
    // the next: three Huffman decodings a response (~700 instructions each).
    func huffman(_ text: String) -> [UInt8] { HuffmanReference.encode(Array(text.utf8)) }
    let repeated = ["nginx/1.22.1", "Fri, 27 Nov 2026 02:48:33 GMT", "application/octet-stream", "Fri, 27 Nov 2026 02:48:14 GMT"]
    let decoder = HPACKDecoder()
    for (index, length) in [512, 1212, 1912, 2612, 3312, 4012].enumerated() {
      let encoded = repeated.map(huffman)
      let response: [UInt8] =
        [0x88, 0x76] + Self.literal(encoded[0], huffman: true) + [0x61] + Self.literal(encoded[1], huffman: true) + [0x5f]
        + Self.literal(encoded[2], huffman: true) + [0x5c] + Self.literal(String(length)) + [0x6c]
        + Self.literal(encoded[3], huffman: true)
      let (status, fields) = decoder.decode(response)
      #expect(status == CH2_OK && fields.status == 200 && fields.contentTypeText == "application/octet-stream")
      for (text, bytes) in zip(repeated, encoded) {
        let held = bytes.withUnsafeBufferPointer { ch2_hpack_memo_holds(decoder.state, $0.baseAddress, $0.count) }
        #expect(held != 0, "response \(index): \(text)")
      }
    }
  }
}
