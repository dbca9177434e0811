import CHTTP2
import Testing
import TestSupport

/// RFC 7541 Appendix C: each example's blocks, what they decode to and the table after each.
@Suite("HPACK: RFC 7541 Appendix C")
struct HPACKExampleTests {
  typealias Entry = (name: String, value: String)

  static func expectTable(_ decoder: HPACKDecoder, _ expected: [Entry], size: UInt32, sourceLocation: SourceLocation = #_sourceLocation) {
    let entries = decoder.entries
    #expect(entries.map(\.name) == expected.map(\.name), sourceLocation: sourceLocation)
    #expect(entries.map(\.value) == expected.map(\.value), sourceLocation: sourceLocation)
    #expect(decoder.size == size, sourceLocation: sourceLocation)
  }

  @Test("C.2.1: literal with indexing")
  func literalWithIndexing() {
    let decoder = HPACKDecoder()
    let (status, _) = decoder.decode(hex("400a 6375 7374 6f6d 2d6b 6579 0d63 7573 746f 6d2d 6865 6164 6572"))
    #expect(status == CH2_OK)
    Self.expectTable(decoder, [("custom-key", "custom-header")], size: 55)
  }

  @Test("C.2.2: literal without indexing")
  func literalWithoutIndexing() {
    let decoder = HPACKDecoder()
    let (status, fields) = decoder.decode(hex("040c 2f73 616d 706c 652f 7061 7468"))
    #expect(status == CH2_OK)
    #expect(fields.pathText == "/sample/path")
    Self.expectTable(decoder, [], size: 0)
  }

  @Test("C.2.3: literal never indexed")
  func literalNeverIndexed() {
    let decoder = HPACKDecoder()
    let (status, fields) = decoder.decode(hex("1008 7061 7373 776f 7264 0673 6563 7265 74"))
    #expect(status == CH2_OK)
    #expect(fields.pathText == "" && fields.authorityText == "")
    Self.expectTable(decoder, [], size: 0)
  }

  @Test("C.2.4: indexed field")
  func indexedField() {
    let decoder = HPACKDecoder()
    let (status, fields) = decoder.decode(hex("82"))
    #expect(status == CH2_OK)
    #expect(fields.methodText == "GET")
    Self.expectTable(decoder, [], size: 0)
  }

  static let requestsPlain = [
    "8286 8441 0f77 7777 2e65 7861 6d70 6c65 2e63 6f6d",
    "8286 84be 5808 6e6f 2d63 6163 6865",
    "8287 85bf 400a 6375 7374 6f6d 2d6b 6579 0c63 7573 746f 6d2d 7661 6c75 65",
  ]
  static let requestsHuffman = [
    "8286 8441 8cf1 e3c2 e5f2 3a6b a0ab 90f4 ff",
    "8286 84be 5886 a8eb 1064 9cbf",
    "8287 85bf 4088 25a8 49e9 5ba9 7d7f 8925 a849 e95b b8e8 b4bf",
  ]

  @Test("C.3 (plain) and C.4 (Huffman): three requests on one table", arguments: [false, true])
  func requests(huffman: Bool) {
    let blocks = huffman ? Self.requestsHuffman : Self.requestsPlain
    let decoder = HPACKDecoder()

    var (status, fields) = decoder.decode(hex(blocks[0]))
    #expect(status == CH2_OK)
    #expect(fields.methodText == "GET" && fields.schemeText == "http" && fields.pathText == "/")
    #expect(fields.authorityText == "www.example.com")
    Self.expectTable(decoder, [(":authority", "www.example.com")], size: 57)

    (status, fields) = decoder.decode(hex(blocks[1]))
    #expect(status == CH2_OK)
    #expect(fields.methodText == "GET" && fields.schemeText == "http" && fields.pathText == "/")
    #expect(fields.authorityText == "www.example.com")
    Self.expectTable(decoder, [("cache-control", "no-cache"), (":authority", "www.example.com")], size: 110)

    (status, fields) = decoder.decode(hex(blocks[2]))
    #expect(status == CH2_OK)
    #expect(fields.methodText == "GET" && fields.schemeText == "https" && fields.pathText == "/index.html")
    #expect(fields.authorityText == "www.example.com")
    Self.expectTable(
      decoder, [("custom-key", "custom-value"), ("cache-control", "no-cache"), (":authority", "www.example.com")],
      size: 164)
  }

  static let responsesPlain = [
    """
    4803 3330 3258 0770 7269 7661 7465 611d 4d6f 6e2c 2032 3120 4f63 7420 3230 3133 2032 303a 3133 3a32 3120 474d
    546e 1768 7474 7073 3a2f 2f77 7777 2e65 7861 6d70 6c65 2e63 6f6d
    """,
    "4803 3330 37c1 c0bf",
    """
    88c1 611d 4d6f 6e2c 2032 3120 4f63 7420 3230 3133 2032 303a 3133 3a32 3220 474d 54c0 5a04 677a 6970 7738 666f
    6f3d 4153 444a 4b48 514b 425a 584f 5157 454f 5049 5541 5851 5745 4f49 553b 206d 6178 2d61 6765 3d33 3630 303b
    2076 6572 7369 6f6e 3d31
    """,
  ]
  static let responsesHuffman = [
    """
    4882 6402 5885 aec3 771a 4b61 96d0 7abe 9410 54d4 44a8 2005 9504 0b81 66e0 82a6 2d1b ff6e 919d 29ad 1718 63c7
    8f0b 97c8 e9ae 82ae 43d3
    """,
    "4883 640e ffc1 c0bf",
    """
    88c1 6196 d07a be94 1054 d444 a820 0595 040b 8166 e084 a62d 1bff c05a 839b d9ab 77ad 94e7 821d d7f2 e6c7 b335
    dfdf cd5b 3960 d5af 2708 7f36 72c1 ab27 0fb5 291f 9587 3160 65c0 03ed 4ee5 b106 3d50 07
    """,
  ]

  @Test("C.5 (plain) and C.6 (Huffman): three responses on a table of 256, with eviction", arguments: [false, true])
  func responses(huffman: Bool) {
    let blocks = huffman ? Self.responsesHuffman : Self.responsesPlain
    let decoder = HPACKDecoder()
    // The examples' decoder starts at 256: what a size update at the first block's start does.
    #expect(decoder.decode(hex("3fe101")).status == CH2_OK)
    #expect(decoder.maxSize == 256)

    var (status, fields) = decoder.decode(hex(blocks[0]))
    #expect(status == CH2_OK)
    #expect(fields.status == 302)
    Self.expectTable(
      decoder,
      [
        ("location", "https://www.example.com"), ("date", "Mon, 21 Oct 2013 20:13:21 GMT"),
        ("cache-control", "private"), (":status", "302"),
      ], size: 222)

    (status, fields) = decoder.decode(hex(blocks[1]))
    #expect(status == CH2_OK)
    #expect(fields.status == 307)
    Self.expectTable(
      decoder,
      [
        (":status", "307"), ("location", "https://www.example.com"), ("date", "Mon, 21 Oct 2013 20:13:21 GMT"),
        ("cache-control", "private"),
      ], size: 222)

    (status, fields) = decoder.decode(hex(blocks[2]))
    #expect(status == CH2_OK)
    #expect(fields.status == 200)
    Self.expectTable(
      decoder,
      [
        ("set-cookie", "foo=ASDJKHQKBZXOQWEOPIUAXQWEOIU; max-age=3600; version=1"), ("content-encoding", "gzip"),
        ("date", "Mon, 21 Oct 2013 20:13:22 GMT"),
      ], size: 215)

    // As the RFC has it: a decoder whose table is 256 from the start (no size update), same tables.
    let configured = HPACKDecoder()
    configured.state.pointee.max_size = 256
    for block in blocks { #expect(configured.decode(hex(block)).status == CH2_OK) }
    #expect(configured.entries.map(\.value) == decoder.entries.map(\.value) && configured.size == 215)
  }
}

/// HPACK beyond the RFC's examples: Huffman errors, size updates, oversized entries, malformed
/// integers, strings and indices, the fields' rules, and the table's memory.
@Suite("HPACK: edges")
struct HPACKEdgeTests {
  static func decodeOne(_ block: String) -> (status: ch2_status, fields: ch2_fields) {
    HPACKDecoder().decode(hex(block))
  }

  /// A string literal's bytes: its length (7-bit prefix, Huffman bit) and the bytes.
  static func literal(_ bytes: [UInt8], huffman: Bool = false) -> [UInt8] {
    integer(bytes.count, prefix: 7, first: huffman ? 0x80 : 0) + bytes
  }
  static func literal(_ text: String) -> [UInt8] { literal(Array(text.utf8)) }

  /// An integer with a `prefix`-bit prefix whose other bits are `first`.
  static func integer(_ value: Int, prefix: Int, first: UInt8) -> [UInt8] {
    let mask = (1 << prefix) - 1
    if value < mask { return [first | UInt8(value)] }
    var bytes = [first | UInt8(mask)]
    var rest = value - mask
    while rest >= 128 {
      bytes.append(UInt8(rest & 0x7f) | 0x80)
      rest >>= 7
    }
    return bytes + [UInt8(rest)]
  }

  @Test("Huffman: EOS inside a string, padding over 7 bits, padding not all ones")
  func huffmanErrors() {
    // 'content-type' without indexing (0x0f 0x10), Huffman value. 'a' is 00011.
    #expect(Self.decodeOne("0f10 81 1f").fields.contentTypeText == "a")  // 'a' + 111: fine
    #expect(Self.decodeOne("0f10 85 1f ff ff ff ff").status == CH2_HPACK_BAD_HUFFMAN)  // 'a', EOS, 11111
    #expect(Self.decodeOne("0f10 82 1f ff").status == CH2_HPACK_BAD_HUFFMAN)  // 'a' + 11 one bits
    #expect(Self.decodeOne("0f10 81 ff").status == CH2_HPACK_BAD_HUFFMAN)  // 8 one bits
    #expect(Self.decodeOne("0f10 81 1d").status == CH2_HPACK_BAD_HUFFMAN)  // 'a' + 101
    #expect(Self.decodeOne("0f10 81 00").status == CH2_HPACK_BAD_HUFFMAN)  // '0' + 000
    #expect(Self.decodeOne("0f10 80").fields.content_type_length == 0)  // empty Huffman string
    // ':path' without indexing (0x04) is kept as its code, for the records' reader, which tells
    // the same errors (ch2_huffman_decode_text).
    #expect(Self.decodeOne("04 81 1f").fields.path_huffman == 1)
    #expect(Self.decodeOne("04 81 1f").fields.pathText == "a")
    for bad in ["04 85 1f ff ff ff ff", "04 82 1f ff", "04 81 ff", "04 81 1d", "04 81 00"] {
      let (status, fields) = Self.decodeOne(bad)
      #expect(status == CH2_OK && fields.path_huffman == 1 && fields.decodedPath == nil, "\(bad)")
    }
    #expect(Self.decodeOne("04 80").fields.decodedPath == [])  // empty Huffman string
    // In a name or a value the table keeps (decoded there), errors count too.
    #expect(Self.decodeOne("40 81 1d 01 61").status == CH2_HPACK_BAD_HUFFMAN)  // incremental, literal name
    #expect(Self.decodeOne("7a 81 1d").status == CH2_HPACK_BAD_HUFFMAN)  // user-agent, incremental
    // A name or value neither recorded nor kept is skipped without being decoded.
    #expect(Self.decodeOne("0f2b 81 1d").status == CH2_OK)  // user-agent (58), without indexing
    #expect(Self.decodeOne("00 81 1d 01 61").status == CH2_OK)  // a literal name, without indexing
  }

  @Test("a Huffman-coded literal name is known by its encoding: every recorded name, and none other")
  func huffmanNames() {
    // A literal name without indexing (0x00), Huffman-coded by the reference encoder, its value
    // "200" raw: recorded under its field when the name is one the decoder records.
    let recorded = [":authority", ":method", ":path", ":scheme", ":status", "content-type", "grpc-message", "grpc-status", "host"]
    let nothing = ch2_fields.empty().line
    for name in recorded + ["etag", "accept-ranges", "content-types", "Content-Type", "hos", ""] {
      let encoded = HuffmanReference.encode(Array(name.utf8))
      let (status, fields) = HPACKDecoder().decode([0x00] + Self.literal(encoded, huffman: true) + Self.literal("200"))
      #expect(status == CH2_OK, "\(name)")
      #expect((fields.line != nothing) == recorded.contains(name), "\(name): \(fields.line)")
    }
  }

  @Test("Huffman: every byte value round-trips through the RFC's code")
  func huffmanAllSymbols() {
    // A Huffman encoder over the canonical code rebuilt from Appendix B's lengths.
    let decoder = HPACKDecoder()
    var rng = SplitMix64(state: 3)
    for round in 0..<64 {
      let value = (0..<(round < 2 ? 256 : Int(rng.next() % 500))).map { round == 0 ? UInt8($0) : UInt8(truncatingIfNeeded: rng.next()) }
      let block = [0x04] + Self.literal(HuffmanReference.encode(value), huffman: true)
      let (status, fields) = decoder.decode(block)
      #expect(status == CH2_OK)
      #expect(fields.decodedPath == Array(value.prefix(Int(CH2_PATH_BYTES))))
      #expect(fields.pathCut == (value.count > Int(CH2_PATH_BYTES)))
    }
  }

  @Test("a size update to 0 empties the table; one back to 4096 lets it fill again")
  func sizeUpdateToZeroAndBack() {
    let decoder = HPACKDecoder()
    #expect(decoder.decode(hex(HPACKExampleTests.requestsPlain[0])).status == CH2_OK)
    #expect(decoder.entries.count == 1)
    #expect(decoder.decode(hex("20 82")).status == CH2_OK)  // to 0
    #expect(decoder.entries.isEmpty && decoder.size == 0 && decoder.maxSize == 0)
    // Inserting into a table of 0: the entry is larger than the table, nothing is kept.
    let (status, fields) = decoder.decode(hex("41 0f 7777 772e 6578 616d 706c 652e 636f 6d"))
    #expect(status == CH2_OK && fields.authorityText == "www.example.com" && decoder.entries.isEmpty)
    #expect(decoder.decode(hex("be")).status == CH2_HPACK_BAD_INDEX)
    #expect(decoder.decode(hex("3fe11f")).status == CH2_OK)  // back to 4096
    #expect(decoder.maxSize == 4096)
    #expect(decoder.decode(hex(HPACKExampleTests.requestsPlain[0])).status == CH2_OK)
    #expect(decoder.entries.count == 1 && decoder.size == 57)
    // Both in one block, then a field: the table keeps only what follows.
    #expect(decoder.decode(hex("20 3fe11f 82 400a 6375 7374 6f6d 2d6b 6579 0161")).status == CH2_OK)
    #expect(decoder.entries.map(\.name) == ["custom-key"] && decoder.size == 43)
  }

  @Test("a size update after a field is an error; one beyond SETTINGS' 4096 is followed, up to the kept size")
  func sizeUpdateErrors() {
    #expect(Self.decodeOne("82 20").status == CH2_HPACK_BAD_SIZE_UPDATE)
    #expect(Self.decodeOne("3fe11f 82 3fe11f").status == CH2_HPACK_BAD_SIZE_UPDATE)
    // The decoding side's setting may not be read yet (another thread's, an h2c upgrade's header).
    let decoder = HPACKDecoder()
    #expect(decoder.decode(hex("3fe21f")).status == CH2_OK && decoder.maxSize == 4097)
    #expect(decoder.decode(hex("3fe17f")).status == CH2_OK && decoder.maxSize == 16384)
    #expect(decoder.decode(hex("3f45")).status == CH2_OK && decoder.maxSize == 100)
    #expect(Self.decodeOne("3fe27f").status == CH2_TABLE_TOO_LARGE)  // 16385: more than kept here
  }

  @Test("an entry larger than the table empties it; one of exactly its size fills it")
  func oversizedEntry() {
    let decoder = HPACKDecoder()
    #expect(decoder.decode(hex("3fe101")).status == CH2_OK)
    #expect(decoder.decode(hex(HPACKExampleTests.requestsPlain[0])).status == CH2_OK)
    #expect(decoder.entries.count == 1)
    // ':path' with incremental indexing (0x44), 300 bytes: 5 + 300 + 32 > 256.
    let long = "/" + String(repeating: "p", count: 299)
    var (status, fields) = decoder.decode([0x44] + Self.literal(long))
    #expect(status == CH2_OK && fields.pathText == long)
    #expect(decoder.entries.isEmpty && decoder.size == 0)
    // Huffman, same outcome.
    (status, fields) = decoder.decode([0x44] + Self.literal(HuffmanReference.encode(Array(long.utf8)), huffman: true))
    #expect(status == CH2_OK && fields.pathText == long && decoder.entries.isEmpty)
    // 5 + 219 + 32 == 256: kept, alone.
    let exact = "/" + String(repeating: "q", count: 218)
    (status, fields) = decoder.decode([0x44] + Self.literal(HuffmanReference.encode(Array(exact.utf8)), huffman: true))
    #expect(status == CH2_OK && fields.pathText == exact)
    #expect(decoder.entries.map(\.value) == [exact] && decoder.size == 256)
    // A new name too large for the table is still recognised.
    #expect(decoder.decode(hex("20")).status == CH2_OK)
    (status, fields) = decoder.decode([0x40] + Self.literal(":path") + Self.literal("/x"))
    #expect(status == CH2_OK && fields.pathText == "/x" && decoder.entries.isEmpty)
  }

  @Test("a new entry may name an entry its insertion evicts (RFC 7541 §4.4)")
  func nameOfEvictedEntry() {
    let decoder = HPACKDecoder()
    #expect(decoder.decode(hex("3f45")).status == CH2_OK)  // 100
    // Wrap the ring first: entries of 33 + 32, 33 + 32 (the second evicts the first), then one that
    // names the newest and evicts it.
    let name = "x-" + String(repeating: "n", count: 28)
    for value in ["abc", "def", "ghi"] {
      #expect(decoder.decode([0x40] + Self.literal(name) + Self.literal(value)).status == CH2_OK)
      #expect(decoder.entries.map(\.value) == [value])
    }
    let (status, _) = decoder.decode([0x7e] + Self.literal(String(repeating: "v", count: 30)))  // name: index 62
    #expect(status == CH2_OK)
    #expect(decoder.entries.map(\.name) == [name])
    #expect(decoder.entries.map(\.value) == [String(repeating: "v", count: 30)])
    #expect(decoder.size == 30 + 30 + 32)
    // And a recorded name read back from the table: ':authority' as a new literal, then by index.
    #expect(decoder.decode([0x40] + Self.literal(":authority") + Self.literal("a.example")).status == CH2_OK)
    let (again, fields) = decoder.decode([0x7e] + Self.literal("b.example"))
    #expect(again == CH2_OK && fields.authorityText == "b.example")
    #expect(decoder.decode(hex("be")).fields.authorityText == "b.example")
  }

  @Test("entries that wrap at the ring's end survive a size change, and are read back whole")
  func ringWrapAndResize() {
    let decoder = HPACKDecoder()
    var rng = SplitMix64(state: 11)
    var expected: [(String, String)] = []
    for round in 0..<40 {
      let name = "x-\(round)"
      let value = String((0..<(100 + Int(rng.next() % 900))).map { _ in Character(Unicode.Scalar(UInt8(97 + rng.next() % 26))) })
      let huffman = round % 2 == 0
      let valueBytes = huffman ? HuffmanReference.encode(Array(value.utf8)) : Array(value.utf8)
      var block: [UInt8] = []
      if round % 7 == 3 {
        let size = [1000, 3000, 4096, 2500, 4096][round / 7 % 5]
        block += Self.integer(size, prefix: 5, first: 0x20)
        var kept: [(String, String)] = []
        var used = 0
        for entry in expected {  // the newest that fit: eviction takes the oldest first
          used += entry.0.utf8.count + entry.1.utf8.count + 32
          if used > size { break }
          kept.append(entry)
        }
        expected = kept
      }
      block += [0x40] + Self.literal(name) + Self.literal(valueBytes, huffman: huffman)
      #expect(decoder.decode(block).status == CH2_OK)
      expected.insert((name, value), at: 0)
      var used = 0
      expected = expected.filter { entry in
        used += entry.0.utf8.count + entry.1.utf8.count + 32
        return used <= Int(decoder.maxSize)
      }
      let entries = decoder.entries
      #expect(entries.map(\.name) == expected.map(\.0))
      #expect(entries.map(\.value) == expected.map(\.1))
      // The oldest entry can be named by index (without indexing: the table does not change).
      if !entries.isEmpty {
        let (status, fields) = decoder.decode(Self.integer(61 + entries.count, prefix: 4, first: 0) + Self.literal("v"))
        #expect(status == CH2_OK && fields.path_length == 0)
      }
    }
  }

  @Test("malformed integers, strings and indices")
  func malformed() {
    #expect(Self.decodeOne("80").status == CH2_HPACK_BAD_INDEX)  // index 0
    #expect(Self.decodeOne("be").status == CH2_HPACK_BAD_INDEX)  // 62, empty table
    #expect(Self.decodeOne("7e 0161").status == CH2_HPACK_BAD_INDEX)  // name index 62
    #expect(Self.decodeOne("ff").status == CH2_HPACK_BAD_INTEGER)  // cut after the prefix
    #expect(Self.decodeOne("ff ff").status == CH2_HPACK_BAD_INTEGER)  // cut in the continuation
    #expect(Self.decodeOne("ff ff ff ff ff 0f").status == CH2_HPACK_BAD_INTEGER)  // over 2^32
    #expect(Self.decodeOne("ff 80 80 80 80 80 00").status == CH2_HPACK_BAD_INTEGER)  // 6 continuation bytes
    #expect(Self.decodeOne("ff 80 ff ff ff 0f").status == CH2_HPACK_BAD_INDEX)  // fits 32 bits: index too large
    #expect(Self.decodeOne("04 05 2f 61").status == CH2_HPACK_BAD_STRING)  // 5 bytes announced, 2 left
    #expect(Self.decodeOne("04").status == CH2_HPACK_BAD_INTEGER)  // no value at all
    #expect(Self.decodeOne("00 7f").status == CH2_HPACK_BAD_INTEGER)
    #expect(Self.decodeOne("00 02 3a").status == CH2_HPACK_BAD_STRING)
    #expect(Self.decodeOne("").status == CH2_OK)
  }

  @Test("the fields: first occurrence wins, :authority over host, numbers, truncation")
  func fieldRules() {
    func block(_ fields: [(String, String)]) -> [UInt8] {
      fields.flatMap { [0x00] + Self.literal($0.0) + Self.literal($0.1) }
    }
    var (status, fields) = HPACKDecoder().decode(block([("host", "h.example"), (":authority", "a.example"), ("host", "x")]))
    #expect(status == CH2_OK && fields.authorityText == "a.example")
    (_, fields) = HPACKDecoder().decode(block([(":authority", "a.example"), ("host", "h.example")]))
    #expect(fields.authorityText == "a.example")
    (_, fields) = HPACKDecoder().decode(block([("host", "h.example"), ("host", "second")]))
    #expect(fields.authorityText == "h.example")
    (_, fields) = HPACKDecoder().decode(block([(":path", "/1"), (":path", "/2"), (":method", "PUT"), (":method", "GET")]))
    #expect(fields.pathText == "/1" && fields.methodText == "PUT")
    (_, fields) = HPACKDecoder().decode(block([(":status", "2000"), (":status", "200")]))
    #expect(fields.status == 0)  // the first, not a 3-digit number
    for (text, number) in [("200", 200), ("20a", 0), ("99", 0), ("", 0), ("404", 404)] {
      #expect(HPACKDecoder().decode(block([(":status", text)])).fields.status == UInt16(number))
    }
    for (text, number) in [("0", 0), ("16", 16), ("999", 999), ("1000", -1), ("", -1), ("x", -1), ("-1", -1)] {
      #expect(HPACKDecoder().decode(block([("grpc-status", text)])).fields.grpc_status == Int16(number))
    }
    #expect(HPACKDecoder().decode(block([])).fields.grpc_status == -1)
    (_, fields) = HPACKDecoder().decode(
      block([
        ("grpc-message", String(repeating: "m", count: 200)), ("content-type", String(repeating: "c", count: 65)),
        (":method", String(repeating: "M", count: 17)), (":scheme", String(repeating: "s", count: 20)),
        (":authority", String(repeating: "a", count: 256)), (":path", String(repeating: "p", count: 513)),
      ]))
    #expect(fields.grpc_message_length == 128 && fields.grpc_message_truncated == 1)
    #expect(fields.content_type_length == 64 && fields.content_type_truncated == 1)
    #expect(fields.method_length == 16 && fields.method_truncated == 1)
    #expect(fields.scheme_length == 16)
    #expect(fields.authority_length == 256 && fields.authority_truncated == 0)
    #expect(fields.path_length == 512 && fields.path_truncated == 1)
    #expect(fields.pathText == String(repeating: "p", count: 512))
    // Names not recorded, near misses included, leave the fields empty.
    (_, fields) = HPACKDecoder().decode(
      block([(":pathx", "/"), ("Host", "h"), ("grpc-statu", "1"), ("content-typ", "t"), ("x-path", "/p")]))
    #expect(fields.path_length == 0 && fields.authority_length == 0 && fields.grpc_status == -1)
    #expect(fields.content_type_length == 0)
    // Static entries with values, and names from the static table with literal values.
    (_, fields) = HPACKDecoder().decode(hex("83 87 85 8e") + [0x0f, 0x10] + Self.literal("text/plain"))
    #expect(fields.methodText == "POST" && fields.schemeText == "https" && fields.pathText == "/index.html")
    #expect(fields.status == 500 && fields.contentTypeText == "text/plain")
  }

  @Test("a table of 4096 touches only the first 4096 bytes and 128 entry slots")
  func memoryTouch() {
    let decoder = HPACKDecoder()
    UnsafeMutableRawPointer(decoder.state).initializeMemory(
      as: UInt8.self, repeating: 0xA5, count: MemoryLayout<ch2_hpack_decoder>.size)
    ch2_hpack_init(decoder.state)
    var rng = SplitMix64(state: 5)
    for round in 0..<300 {
      var block: [UInt8] = round % 50 == 49 ? [0x20, 0x3f, 0xe1, 0x1f] : []  // to 0 and back
      for _ in 0..<3 {
        let value = Array(repeating: UInt8(ascii: "v"), count: Int(rng.next() % 600))
        block += [0x40] + Self.literal("x-\(rng.next() % 1000)") + Self.literal(value, huffman: false)
      }
      #expect(decoder.decode(block).status == CH2_OK)
    }
    // `bytes` follows `entries` (Swift does not import a field of 16384 elements).
    let raw = UnsafeRawBufferPointer(start: decoder.state, count: MemoryLayout<ch2_hpack_decoder>.size)
    let entries = MemoryLayout<ch2_hpack_decoder>.offset(of: \.entries)!
    let entrySize = MemoryLayout<ch2_hpack_entry>.stride
    let bytes = entries + Int(CH2_HPACK_MAX_ENTRIES) * entrySize
    #expect(bytes + Int(CH2_HPACK_TABLE_SIZE) == raw.count)
    #expect(raw[(entries + 128 * entrySize)..<bytes].allSatisfy { $0 == 0xA5 })
    #expect(raw[(bytes + 4096)...].allSatisfy { $0 == 0xA5 })
    #expect(!raw[bytes..<(bytes + 4096)].allSatisfy { $0 == 0xA5 })
  }

  @Test("differential: random blocks decoded by Python's hpack give the same fields and tables")
  func differential() {
    var decoder = HPACKDecoder()
    var blocks = 0
    var lastFields = ch2_fields.empty()
    var entryIndex = 0
    var table: [(name: [UInt8], value: [UInt8])] = []
    for line in HTTP2Fixtures.hpackCases {
      let parts = line.split(separator: " ")
      switch parts[0] {
      case "C":
        decoder = HPACKDecoder()  // a new sequence (the limit hpack's Decoder was given: none here)
      case "B":
        let (status, fields) = decoder.decode(hex(String(parts[1].dropFirst())))
        #expect(status == CH2_OK)
        lastFields = fields
        entryIndex = 0
        blocks += 1
      case "F":
        // Texts are expected whole: compare their first capacity bytes and the truncation flags.
        let expected = parts.map { $0 == "x" ? "-" : String($0) }
        let got = lastFields.line.split(separator: " ").map(String.init)
        #expect(expected[0...2] == got[0...2])
        let capacities = [16, 16, 256, 512, 64, 128]
        for (k, capacity) in capacities.enumerated() {
          let want = expected[3 + k] == "-" ? [] : hex(String(expected[3 + k].dropFirst()))
          let have = got[3 + k] == "-" ? [] : hex(String(got[3 + k].dropFirst()))
          #expect(have == Array(want.prefix(capacity)), "field \(k) of block \(blocks)")
        }
        #expect(lastFields.pathCut == (expected[6] != "-" && expected[6].count / 2 > 512))
      case "T":
        #expect(decoder.size == UInt32(parts[1])! && decoder.maxSize == UInt32(parts[2])!)
        #expect(decoder.state.pointee.count == UInt32(parts[3])!)
        table = decoder.rawEntries
      case "E":
        #expect(entryIndex < table.count)
        if entryIndex < table.count {
          #expect(table[entryIndex].name == hex(String(parts[1].dropFirst())))
          #expect(table[entryIndex].value == hex(String(parts[2].dropFirst())))
        }
        entryIndex += 1
      default: Issue.record("unknown line \(parts[0])")
      }
    }
    #expect(blocks == HTTP2Fixtures.hpackCases.filter { $0.hasPrefix("B ") }.count && blocks > 20)
  }
}
