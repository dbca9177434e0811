import CHTTP2
import Testing
import TestSupport

/// Seeded random input for the frame reader and the decoder: random bytes, and truncations and
/// mutations of the fixture conversation and of HPACK blocks. Nothing may crash (a crash fails the
/// run), read past what it was given or report more than its capacities; a stopped reader reads
/// everything after without an event.
@Suite("HTTP/2 fuzz")
struct HTTP2FuzzTests {
  /// Feeds `bytes` in random chunks to a reader (and each block to a decoder); checks the
  /// invariants. Returns whether the reader stopped.
  @discardableResult
  static func run(_ bytes: [UInt8], preface: Bool, rng: inout SplitMix64) -> Bool {
    let reader = FrameReader(expectPreface: preface)
    let decoder = HPACKDecoder()
    var cuts: [Int] = []
    if !bytes.isEmpty {
      for _ in 0..<Int(rng.next() % 6) { cuts.append(Int(rng.next() % UInt64(bytes.count))) }
    }
    var errors = 0
    var decoding = true
    reader.feed(bytes, cuts: cuts) { event in
      if event.isError {
        errors += 1
        #expect(reader.status != CH2_OK)
      } else {
        #expect(event.isFrame && event.frame_bytes >= 9)
      }
      #expect(errors <= 1 && (errors == 0 || event.isError))
      if event.has_block != 0 {
        #expect(reader.state.pointee.block_length <= CH2_BLOCK_BYTES)
        if decoding {
          let (status, fields) = decoder.decode(reader.block)
          checkFields(fields)
          checkTable(decoder)
          decoding = status == CH2_OK
        }
      }
    }
    if errors > 0 {
      // Stopped: whatever follows is read whole, with no event.
      var after = 0
      reader.feed(bytes + [0, 1, 2]) { _ in after += 1 }
      #expect(after == 0)
    }
    return errors > 0
  }

  static func checkFields(_ fields: ch2_fields) {
    #expect(fields.method_length <= CH2_METHOD_BYTES && fields.scheme_length <= CH2_SCHEME_BYTES)
    #expect(fields.authority_length <= CH2_AUTHORITY_BYTES && fields.path_length <= CH2_PATH_BYTES)
    #expect(fields.content_type_length <= CH2_CONTENT_TYPE_BYTES)
    #expect(fields.grpc_message_length <= CH2_GRPC_MESSAGE_BYTES)
    #expect(fields.status == 0 || (100...999).contains(fields.status))
    #expect((-1...999).contains(fields.grpc_status))
  }

  /// The table's RFC size is the sum of its entries' and within its maximum.
  static func checkTable(_ decoder: HPACKDecoder) {
    let entries = decoder.rawEntries
    let size = entries.reduce(0) { $0 + $1.name.count + $1.value.count + 32 }
    #expect(UInt32(size) == decoder.size && decoder.size <= decoder.maxSize && decoder.maxSize <= CH2_HPACK_TABLE_SIZE)
    #expect(entries.count == Int(decoder.state.pointee.count))
  }

  @Test("random bytes, with and without the preface")
  func randomBytes() {
    var rng = SplitMix64(state: 0x4854_5450_32)
    for round in 0..<3000 {
      let count = Int(rng.next() % (round % 10 == 0 ? 3000 : 80))
      var bytes = (0..<count).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
      if round % 3 == 0 { bytes = clientPreface + bytes }
      if round % 5 == 0 && bytes.count > 12 {
        // A plausible frame header at the start: small length, known type.
        bytes[0] = 0
        bytes[1] = 0
        bytes[3] = UInt8(rng.next() % 10)
      }
      Self.run(bytes, preface: round % 3 == 0, rng: &rng)
    }
  }

  @Test("truncations and mutations of a real conversation")
  func mutatedConversation() {
    var rng = SplitMix64(state: 23)
    var stopped = 0
    for round in 0..<2000 {
      let client = round % 2 == 0
      var bytes = client ? HTTP2Fixtures.clientStream : HTTP2Fixtures.serverStream
      switch rng.next() % 4 {
      case 0: bytes = Array(bytes.prefix(Int(rng.next() % UInt64(bytes.count))))
      case 1:
        for _ in 0..<(1 + Int(rng.next() % 4)) {
          bytes[Int(rng.next() % UInt64(bytes.count))] ^= UInt8(truncatingIfNeeded: 1 << (rng.next() % 8))
        }
      case 2:
        for _ in 0..<(1 + Int(rng.next() % 8)) {
          bytes[Int(rng.next() % UInt64(bytes.count))] = UInt8(truncatingIfNeeded: rng.next())
        }
      default:
        let at = Int(rng.next() % UInt64(bytes.count))
        let count = Int(rng.next() % 40)
        if rng.next() % 2 == 0 {
          bytes.removeSubrange(at..<min(bytes.count, at + count))
        } else {
          bytes.insert(contentsOf: (0..<count).map { _ in UInt8(truncatingIfNeeded: rng.next()) }, at: at)
        }
      }
      if Self.run(bytes, preface: client, rng: &rng) { stopped += 1 }
    }
    #expect(stopped > 100)  // the mutations do reach the error paths
  }

  @Test("random and mutated HPACK blocks, one decoder per sequence")
  func mutatedBlocks() {
    var rng = SplitMix64(state: 77)
    let blocks = HTTP2Fixtures.hpackCases.filter { $0.hasPrefix("B ") }.map { hex(String($0.dropFirst(3))) }
      + HPACKExampleTests.requestsHuffman.map { hex($0) } + HPACKExampleTests.responsesHuffman.map { hex($0) }
    var failures = 0
    for round in 0..<1500 {
      // A table of a random size from the start (an empty table takes it as a size update would).
      let decoder = HPACKDecoder()
      decoder.state.pointee.max_size = [0, 100, 256, 4096, 16384][Int(rng.next() % 5)]
      for _ in 0..<(1 + Int(rng.next() % 5)) {
        var block: [UInt8]
        if round % 4 == 0 {
          block = (0..<Int(rng.next() % 200)).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
        } else {
          block = blocks[Int(rng.next() % UInt64(blocks.count))]
          if !block.isEmpty {
            for _ in 0..<Int(rng.next() % 4) {
              block[Int(rng.next() % UInt64(block.count))] ^= UInt8(truncatingIfNeeded: rng.next())
            }
            if rng.next() % 3 == 0 { block = Array(block.prefix(Int(rng.next() % UInt64(block.count)))) }
          }
        }
        let (status, fields) = decoder.decode(block)
        Self.checkFields(fields)
        if status != CH2_OK {
          failures += 1
          #expect(!String(cString: ch2_status_name(status)).isEmpty)
          break
        }
        Self.checkTable(decoder)
      }
    }
    #expect(failures > 100)
  }
}
