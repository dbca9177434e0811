import CHTTP2
import Foundation
import Testing

/// Bytes from hex digits; whitespace and newlines are skipped.
func hex(_ text: String) -> [UInt8] {
  var bytes: [UInt8] = []
  var high: UInt8? = nil
  for character in text.utf8 {
    let digit: UInt8
    switch character {
    case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = character - UInt8(ascii: "0")
    case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = character - UInt8(ascii: "a") + 10
    case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = character - UInt8(ascii: "A") + 10
    default: continue
    }
    if let value = high {
      bytes.append(value << 4 | digit)
      high = nil
    } else {
      high = digit
    }
  }
  precondition(high == nil, "odd number of hex digits")
  return bytes
}

/// "x" followed by the bytes' hex digits.
func hexText(_ bytes: [UInt8]) -> String {
  let digits = Array("0123456789abcdef".utf8)
  var text: [UInt8] = [UInt8(ascii: "x")]
  for byte in bytes { text += [digits[Int(byte >> 4)], digits[Int(byte & 15)]] }
  return String(decoding: text, as: UTF8.self)
}


/// The first `count` bytes of a C array (imported as a tuple).
func prefix<T>(_ array: T, _ count: Int) -> [UInt8] {
  withUnsafeBytes(of: array) { Array($0.prefix(count)) }
}

extension ch2_fields {
  static func empty() -> ch2_fields {
    var fields = ch2_fields()
    ch2_fields_clear(&fields)
    return fields
  }
  var methodText: String { String(decoding: prefix(method, Int(method_length)), as: UTF8.self) }
  var schemeText: String { String(decoding: prefix(scheme, Int(scheme_length)), as: UTF8.self) }
  var authorityText: String { String(decoding: prefix(authority, Int(authority_length)), as: UTF8.self) }
  /// The path as the records' reader makes it: decoded when it was kept as its Huffman code
  /// (`path_huffman`), cut at CH2_PATH_BYTES; nil for a code that is not valid.
  var decodedPath: [UInt8]? {
    let kept = prefix(path, Int(path_length))
    guard path_huffman != 0 else { return kept }
    var text = [UInt8](repeating: 0, count: Int(CH2_PATH_BYTES))
    let length = ch2_huffman_decode_text(kept, kept.count, &text, text.count)
    return length == Int(bitPattern: UInt(UInt64.max)) ? nil : Array(text.prefix(Swift.min(length, text.count)))
  }
  /// Whether the path is cut: as the decoder cut it, or longer decoded than CH2_PATH_BYTES.
  var pathCut: Bool {
    guard path_huffman != 0 else { return path_truncated != 0 }
    let kept = prefix(path, Int(path_length))
    var text = [UInt8](repeating: 0, count: 1)
    return ch2_huffman_decode_text(kept, kept.count, &text, 0) > Int(CH2_PATH_BYTES)
  }
  var pathText: String { String(decoding: decodedPath ?? [], as: UTF8.self) }
  var contentTypeText: String { String(decoding: prefix(content_type, Int(content_type_length)), as: UTF8.self) }
  var grpcMessageText: String { String(decoding: prefix(grpc_message, Int(grpc_message_length)), as: UTF8.self) }

  /// "F status grpc_status method scheme authority path content_type grpc_message", texts as x+hex,
  /// "-" when empty (the fixtures' format, with present-but-empty written "-" too).
  var line: String {
    func text(_ bytes: [UInt8]) -> String { bytes.isEmpty ? "-" : hexText(bytes) }
    return "F \(status) \(grpc_status) " + [
      text(prefix(method, Int(method_length))), text(prefix(scheme, Int(scheme_length))),
      text(prefix(authority, Int(authority_length))), text(decodedPath ?? []),
      text(prefix(content_type, Int(content_type_length))), text(prefix(grpc_message, Int(grpc_message_length))),
    ].joined(separator: " ")
  }
}

/// A fixture's "F" line with present-but-empty texts ("x") written "-", as `ch2_fields.line` does.
func normalizedFieldsLine(_ line: Substring) -> String {
  line.split(separator: " ").map { $0 == "x" ? "-" : String($0) }.joined(separator: " ")
}

/// A `ch2_hpack_decoder` on the heap (it is 42 KiB). `keepsTable`: the table is never left unkept
/// (a reference, or a test of what the table spares).
final class HPACKDecoder {
  let state = UnsafeMutablePointer<ch2_hpack_decoder>.allocate(capacity: 1)

  init(keepsTable: Bool = false) {
    ch2_hpack_init(state)
    if keepsTable { state.pointee.lazy_allowed = 0 }
  }
  /// A fresh decoder again, with the same keeping, and the counters kept.
  func reset() {
    let allowed = state.pointee.lazy_allowed
    let (logged, rebuilds) = (state.pointee.blocks_logged, state.pointee.table_rebuilds)
    ch2_hpack_init(state)
    state.pointee.lazy_allowed = allowed
    state.pointee.blocks_logged = logged
    state.pointee.table_rebuilds = rebuilds
  }
  deinit { state.deallocate() }

  /// Decodes `block` (copied to a buffer of exactly its size).
  func decode(_ block: [UInt8]) -> (status: ch2_status, fields: ch2_fields) {
    let status = block.withUnsafeBufferPointer { ch2_hpack_decode(state, $0.baseAddress, $0.count) }
    return (status, state.pointee.fields)
  }

  /// The dynamic table, newest first (rebuilt first if it is not kept now).
  var entries: [(name: String, value: String)] {
    rawEntries.map { (String(decoding: $0.name, as: UTF8.self), String(decoding: $0.value, as: UTF8.self)) }
  }
  var rawEntries: [(name: [UInt8], value: [UInt8])] {
    #expect(ch2_hpack_keep_table(state) == CH2_OK)
    var result: [(name: [UInt8], value: [UInt8])] = []
    var name = [UInt8](repeating: 0, count: Int(CH2_HPACK_TABLE_SIZE))
    var value = [UInt8](repeating: 0, count: Int(CH2_HPACK_TABLE_SIZE))
    var index: UInt32 = 1
    while true {
      var nameLength = 0
      var valueLength = 0
      let found = ch2_hpack_entry_at(state, index, &name, name.count, &nameLength, &value, value.count, &valueLength)
      if found == 0 { break }
      result.append((Array(name.prefix(nameLength)), Array(value.prefix(valueLength))))
      index += 1
    }
    return result
  }
  var size: UInt32 {
    #expect(ch2_hpack_keep_table(state) == CH2_OK)
    return state.pointee.size
  }
  /// Whether the table is not kept now.
  var isLazy: Bool { state.pointee.lazy != 0 }
  var maxSize: UInt32 { state.pointee.max_size }
}

/// A `ch2_reader` on the heap, with the events it gave.
final class FrameReader {
  let state = UnsafeMutablePointer<ch2_reader>.allocate(capacity: 1)

  init(expectPreface: Bool) { ch2_reader_init(state, expectPreface ? 1 : 0) }
  deinit { state.deallocate() }

  var status: ch2_status { ch2_status(rawValue: UInt32(state.pointee.status)) }
  var block: [UInt8] {
    Array(UnsafeBufferPointer(start: ch2_reader_block(state), count: Int(state.pointee.block_length)))
  }

  /// Reads `bytes` (in one call per chunk between `cuts`, each chunk in a buffer of exactly its
  /// size), calling `onEvent` for every event other than NONE; checks what ch2_read returns.
  func feed(_ bytes: [UInt8], cuts: [Int] = [], onEvent: (ch2_event) -> Void) {
    var start = 0
    for end in cuts.filter({ $0 > 0 && $0 < bytes.count }).sorted() + [bytes.count] where end > start {
      let chunk = Array(bytes[start..<end])
      chunk.withUnsafeBufferPointer { buffer in
        var offset = 0
        while offset < buffer.count {
          var event = ch2_event()
          let read = ch2_read(state, buffer.baseAddress! + offset, buffer.count - offset, &event)
          precondition(read > 0 && read <= buffer.count - offset, "ch2_read returned \(read)")
          offset += read
          if event.kind == UInt8(CH2_EVENT_NONE.rawValue) {
            precondition(offset == buffer.count, "NONE before the end of the bytes")
          } else {
            onEvent(event)
          }
        }
      }
      start = end
    }
  }
}

extension ch2_event {
  /// "V kind type flags end_stream has_block block_is_push stream_id frame_bytes promised_stream_id
  /// error_code last_stream_id header_table_size", the fixtures' format.
  var line: String {
    "V \(kind) \(type) \(flags) \(end_stream) \(has_block) \(block_is_push) \(stream_id) \(frame_bytes) "
      + "\(promised_stream_id) \(error_code) \(last_stream_id) \(header_table_size)"
  }
  var isFrame: Bool { kind == UInt8(CH2_EVENT_FRAME.rawValue) }
  var isError: Bool { kind == UInt8(CH2_EVENT_ERROR.rawValue) }
}

/// A frame: its 9-byte header, then `payload`.
func frame(_ type: Int, flags: Int = 0, stream: UInt32, _ payload: [UInt8] = []) -> [UInt8] {
  let length = payload.count
  return [UInt8(length >> 16 & 0xff), UInt8(length >> 8 & 0xff), UInt8(length & 0xff), UInt8(type), UInt8(flags)]
    + bigEndian(stream) + payload
}

func bigEndian(_ value: UInt32) -> [UInt8] {
  [UInt8(value >> 24), UInt8(value >> 16 & 0xff), UInt8(value >> 8 & 0xff), UInt8(value & 0xff)]
}

/// The client connection preface.
let clientPreface = Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8)

/// What reading `bytes` in the chunks between `cuts` gives: the events' lines and, after each
/// block, the fields the decoder read from it (a decoding error as "error <status>").
func readAndDecode(_ bytes: [UInt8], expectPreface: Bool, cuts: [Int] = []) -> [String] {
  let reader = FrameReader(expectPreface: expectPreface)
  let decoder = HPACKDecoder()
  var lines: [String] = []
  var decoding = true
  reader.feed(bytes, cuts: cuts) { event in
    lines.append(event.line)
    if event.isError { lines.append("error \(String(cString: ch2_status_name(reader.status)))") }
    if event.has_block != 0 && decoding {
      let (status, fields) = decoder.decode(reader.block)
      if status == CH2_OK {
        lines.append(fields.line)
      } else {
        lines.append("error \(String(cString: ch2_status_name(status)))")
        decoding = false
      }
    }
  }
  return lines
}

/// A fresh connection, its memory not zero (as a reused pool entry's is not), its streams handed
/// to `callbacks`, for the body; freed after.
func withFreshConnection<T>(
  generation: UInt32, callbacks: ch2_stream_callbacks, _ body: (UnsafeMutablePointer<ch2_connection>) -> T
) -> T {
  let connection = UnsafeMutablePointer<ch2_connection>.allocate(capacity: 1)
  defer { connection.deallocate() }
  UnsafeMutableRawPointer(connection).initializeMemory(as: UInt8.self, repeating: 0xA5, count: MemoryLayout<ch2_connection>.size)
  return withUnsafePointer(to: callbacks) { callbacks in
    ch2_connection_start(connection, generation, callbacks)
    return body(connection)
  }
}

/// Tables of stream slots for test connections to borrow (ch2_stream_callbacks' `more_slots`):
/// each pool a few, each table given back to the pool it came from by its own `give_back`.
final class BorrowedTables: @unchecked Sendable {
  /// StreamSlotsTests' (which counts them), and the random frames'.
  static let slots = BorrowedTables(count: 8), randomFrames = BorrowedTables(count: 8)
  private let lock = NSLock()
  private let all: Set<UnsafeMutablePointer<ch2_stream_table>>
  private var tables: [UnsafeMutablePointer<ch2_stream_table>]

  init(count: Int) {
    tables = (0..<count).map { _ in
      let raw = UnsafeMutableRawPointer.allocate(byteCount: MemoryLayout<ch2_stream_table>.size, alignment: 64)
      raw.initializeMemory(as: UInt8.self, repeating: 0xA5, count: MemoryLayout<ch2_stream_table>.size)
      return raw.bindMemory(to: ch2_stream_table.self, capacity: 1)
    }
    all = Set(tables)
  }

  var free: Int { lock.withLock { tables.count } }

  func take() -> UnsafeMutablePointer<ch2_stream_table>? {
    guard let table = lock.withLock({ tables.popLast() }) else { return nil }
    table.pointee.give_back = { table in
      let owner = [BorrowedTables.slots, BorrowedTables.randomFrames].first { $0.all.contains(table!) }!
      owner.lock.withLock { owner.tables.append(table!) }
    }
    return table
  }
}
