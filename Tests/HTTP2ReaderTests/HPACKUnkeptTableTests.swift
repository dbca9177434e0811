import CHTTP2
import Testing
import TestSupport

/// The table left unkept while the peer's encoder names none of it: the blocks read without it
/// say what decoding them with it says, and the table rebuilt from the logged blocks is the one
/// decoding every block keeps — checked against a decoder that always keeps its table.
extension HPACKEdgeTests {
  /// nginx's response: :status 200, then server, date, content-type, content-length and
  /// last-modified with incremental indexing (static names), then etag and accept-ranges without.
  static func nginxResponse(length: Int, second: Int, file: Int) -> [UInt8] {
    func huffman(_ text: String) -> [UInt8] { literal(HuffmanReference.encode(Array(text.utf8)), huffman: true) }
    return [0x88, 0x76] + huffman("nginx/1.22.1") + [0x61] + huffman("Fri, 27 Nov 2026 02:48:\(10 + second) GMT")
      + [0x5f] + huffman("application/octet-stream") + [0x5c] + literal(String(length)) + [0x6c]
      + huffman("Wed, 25 Nov 2026 23:04:\(10 + file) GMT") + [0x00] + huffman("etag")
      + huffman("\"6926539e-\(length)\"") + [0x00] + huffman("accept-ranges") + huffman("bytes")
  }

  @Test("nginx's responses: after a few, read without the table, the same fields; the table rebuilt when a block names it")
  func nginxResponsesWithoutTable() {
    let lazy = HPACKDecoder(), kept = HPACKDecoder(keepsTable: true)
    for index in 0..<200 {
      // Files of 5 lengths, the date ticking; each response now and then twice in a row.
      let block = Self.nginxResponse(length: 512 + 700 * (index % 5), second: index / 40, file: index % 3)
      for _ in 0..<(index % 7 == 0 ? 2 : 1) {
        let (status, fields) = lazy.decode(block)
        let (referenceStatus, expected) = kept.decode(block)
        #expect(status == CH2_OK && referenceStatus == CH2_OK, "block \(index)")
        #expect(fields.line == expected.line, "block \(index)")
        #expect(fields.status == 200 && fields.contentTypeText == "application/octet-stream")
      }
    }
    #expect(lazy.isLazy && lazy.state.pointee.blocks_logged > 150)
    // The logged blocks that matter are those whose entries may still be in the table.
    #expect(lazy.state.pointee.log_end - lazy.state.pointee.log_start < 4096)
    // A block that names the newest entry (last-modified) and inserts: the table comes back.
    let naming: [UInt8] = [0x88, 0xbe, 0x40] + Self.literal("x-c") + Self.literal("v")
    let (status, fields) = lazy.decode(naming)
    let (_, expected) = kept.decode(naming)
    #expect(status == CH2_OK && fields.line == expected.line && !lazy.isLazy)
    #expect(lazy.state.pointee.table_rebuilds == 1)
    #expect(lazy.entries.map(\.name) == kept.entries.map(\.name))
    #expect(lazy.entries.map(\.value) == kept.entries.map(\.value))
    #expect(lazy.size == kept.size)
  }

  @Test("random blocks from an encoder that seldom names its table: the same fields, errors and tables as keeping it")
  func randomBlocksWithoutTable() {
    var rng = SplitMix64(state: 41)
    func pick<T>(_ items: [T]) -> T { items[Int(rng.next() % UInt64(items.count))] }
    let names = [":path", ":authority", "content-type", "grpc-status", "grpc-message", "date", "x-id", "server", "host"]
    let values = ["/", "/a?b=1", "127.0.0.1:8443", "application/grpc", "0", "14", "fine", "Fri, 27 Nov 2026 02:48:33 GMT", "v",
                  String(repeating: "long value ", count: 30)]
    func string(_ text: String) -> [UInt8] {
      rng.next() % 2 == 0 ? Self.literal(text) : Self.literal(HuffmanReference.encode(Array(text.utf8)), huffman: true)
    }
    // A field that names no entry of the table: static indexed, or a literal (with, without or
    // never indexed) whose name is static or literal.
    func field() -> [UInt8] {
      if rng.next() % 5 == 0 { return [0x80 | UInt8(1 + rng.next() % 61)] }
      let (prefix, first): (Int, UInt8) = pick([(6, 0x40), (6, 0x40), (6, 0x40), (4, 0x00), (4, 0x10)])
      let name = pick([0, 0, 1, 4, 8, 31, 33, 54])
      let head = Self.integer(name, prefix: prefix, first: first)
      return (name == 0 ? head + string(pick(names)) : head) + string(pick(values))
    }
    let lazy = HPACKDecoder(), kept = HPACKDecoder(keepsTable: true)
    var last: [UInt8] = []
    var errors = 0
    for index in 0..<3000 {
      var block: [UInt8]
      switch rng.next() % 40 {
      case 0: block = [0x80 | UInt8(62 + rng.next() % 4)] + field()  // names the table (maybe past its end)
      case 1: block = Self.integer(pick([0, 256, 1024, 4096]), prefix: 5, first: 0x20) + field()  // a size update
      case 2, 3, 4, 5: block = last  // the last block again
      case 6: block = (0..<300).flatMap { _ in [0x40] + Self.literal("x-\(rng.next() % 9)") + Self.literal("w") }  // log-sized
      default: block = (0..<(1 + rng.next() % 6)).flatMap { _ in field() }
      }
      let (status, fields) = lazy.decode(block)
      let (referenceStatus, expected) = kept.decode(block)
      #expect(status == referenceStatus, "block \(index)")
      if status != CH2_OK {
        errors += 1
        lazy.reset()
        kept.reset()
        last = []
        continue
      }
      #expect(fields.line == expected.line, "block \(index)")
      // Now and then the tables compared: the lazy one rebuilt, and left unkept again soon after.
      if index % 97 == 0 {
        #expect(lazy.entries.map(\.name) == kept.entries.map(\.name), "block \(index)")
        #expect(lazy.entries.map(\.value) == kept.entries.map(\.value), "block \(index)")
        #expect(lazy.size == kept.size && lazy.maxSize == kept.maxSize, "block \(index)")
        lazy.state.pointee.clean_needed = 8
      }
      last = block
    }
    // (901 blocks read without the table, 59 rebuilds, 18 errors with this seed.)
    #expect(lazy.state.pointee.blocks_logged > 600 && lazy.state.pointee.table_rebuilds > 30)
    #expect(kept.state.pointee.blocks_logged == 0 && errors < 300)
  }

  @Test("a logged entry that still fits the table, to the byte, is there when a block names it")
  func entryThatStillFits() {
    // An :authority entry of 136 (32 + 10 + 94, raw: sizes known exactly), then 120 of 33 (a
    // name of one byte, an empty value) fill 4096 exactly: the first is still in the table, and
    // the block naming it (index 62 + 120) reads it.
    let lazy = HPACKDecoder(), kept = HPACKDecoder(keepsTable: true)
    let authority = String(repeating: "a", count: 94)
    let first: [UInt8] = [0x41] + Self.literal(authority)
    let blocks = [first] + (0..<120).map { [0x40] + Self.literal(String(UnicodeScalar(UInt8(97 + $0 % 26)))) + Self.literal("") }
    for block in Array(repeating: [0x88] as [UInt8], count: 8) + blocks {
      #expect(lazy.decode(block).status == CH2_OK && kept.decode(block).status == CH2_OK)
    }
    #expect(lazy.isLazy && kept.size == 4096)
    let (status, fields) = lazy.decode(Self.integer(62 + 120, prefix: 7, first: 0x80))
    #expect(status == CH2_OK && fields.authorityText == authority)
    #expect(lazy.entries.map(\.value) == kept.entries.map(\.value))
  }

  @Test("Huffman strings of the longest codes: their entries' least size is not more than their size")
  func longestCodesStillFit() {
    // Newline's code is 30 bits: "\n\n\n" is 12 bytes as Huffman, 3 decoded. 100 entries of 36
    // (32 + 1 + 3) and an :authority entry of 496 (32 + 10 + 454) fill 4096 exactly.
    let lazy = HPACKDecoder(), kept = HPACKDecoder(keepsTable: true)
    let authority = String(repeating: "a", count: 454)
    let newlines = HuffmanReference.encode([0x0a, 0x0a, 0x0a])
    #expect(newlines.count == 12)
    let blocks = [[0x41] + Self.literal(authority)] + (0..<100).map { _ in [0x40] + Self.literal("x") + Self.literal(newlines, huffman: true) }
    for block in Array(repeating: [0x88] as [UInt8], count: 8) + blocks {
      #expect(lazy.decode(block).status == CH2_OK && kept.decode(block).status == CH2_OK)
    }
    #expect(lazy.isLazy && kept.size == 4096)
    let naming = Self.integer(62 + 100, prefix: 7, first: 0x80)
    let (status, fields) = lazy.decode(naming)
    #expect(status == CH2_OK && fields.line == kept.decode(naming).fields.line)
    #expect(fields.authorityText == String(authority.prefix(Int(CH2_AUTHORITY_BYTES))) && fields.authority_truncated != 0)
  }

  @Test("a block larger than the log is decoded with the table")
  func blockLargerThanLog() {
    let lazy = HPACKDecoder(), kept = HPACKDecoder(keepsTable: true)
    let small: [UInt8] = [0x88, 0x40] + Self.literal("x-a") + Self.literal("1")
    for _ in 0..<20 {
      _ = lazy.decode(small)
      _ = kept.decode(small)
    }
    #expect(lazy.isLazy)
    let huge: [UInt8] = (0..<2400).flatMap { [0x40] + Self.literal("x-\($0)") + Self.literal("v") }
    #expect(huge.count > Int(CH2_HPACK_LOG_BYTES))
    let (status, fields) = lazy.decode(huge)
    #expect(status == CH2_OK && fields.status == 0 && kept.decode(huge).status == CH2_OK)
    #expect(!lazy.isLazy && lazy.entries.map(\.name) == kept.entries.map(\.name) && lazy.size == kept.size)
  }
}
