import CHTTP2
import Testing
import TestSupport

/// streams.c: a connection's streams followed from both directions' frames. A conversation gives
/// the records it should; random frames on both directions, in random pieces, never record a
/// stream twice, record only streams whose halves both ended, and leave none open after the close.
@Suite("HTTP/2 streams")
struct StreamsTests {
  /// What the callbacks saw, through the context pointer.
  final class Seen {
    var heads: [UInt32] = []
    var records: [(id: UInt32, state: UInt64, status: UInt16, requestBytes: UInt64, responseBytes: UInt64,
                   complete: Bool, method: String, grpcStatus: Int16)] = []
    var recordedTags = Set<UInt64>()
    var recordedTwice = 0
  }

  static let callbacks = ch2_stream_callbacks(
    take_request_head: { context, _, stream, fields in
      let seen = Unmanaged<Seen>.fromOpaque(context!).takeUnretainedValue()
      seen.heads.append(UInt32(truncatingIfNeeded: stream!.pointee.request_tag >> 3) & 0x7FFF_FFFF)
      stream!.pointee.has_head = 1
      let method = withUnsafeBytes(of: fields!.pointee.method) { Array($0.prefix(Int(fields!.pointee.method_length))) }
      ch2_stream_head(stream!)!.copyMemory(from: method, byteCount: method.count)
      ch2_stream_head(stream!)!.storeBytes(of: UInt8(method.count), toByteOffset: 100, as: UInt8.self)
    },
    record: { context, connection, slot, id, _ in
      let seen = Unmanaged<Seen>.fromOpaque(context!).takeUnretainedValue()
      let tag = ch2_stream_tag(connection!, id)
      if !seen.recordedTags.insert(tag).inserted { seen.recordedTwice += 1 }
      let stream = slot!.pointee
      let head = ch2_stream_head(slot!)!
      let length = Int(head.load(fromByteOffset: 100, as: UInt8.self))
      let method = stream.has_head != 0 && stream.request_tag == tag
        ? String(decoding: UnsafeRawBufferPointer(start: head, count: length), as: UTF8.self) : ""
      seen.records.append(
        (id, stream.state, stream.status, stream.request_bytes, stream.response_bytes, stream.response_complete != 0,
         method, stream.grpc_status))
    })

  /// A fresh connection (~200 KB), for the body; freed after.
  static func withConnection<T>(_ body: (UnsafeMutablePointer<ch2_connection>, Seen, UnsafeMutableRawPointer) -> T) -> T {
    let connection = UnsafeMutablePointer<ch2_connection>.allocate(capacity: 1)
    defer { connection.deallocate() }
    UnsafeMutableRawPointer(connection).initializeMemory(as: UInt8.self, repeating: 0xA5, count: MemoryLayout<ch2_connection>.size)
    return withUnsafePointer(to: callbacks) { callbacks in
      ch2_connection_start(connection, 7, callbacks)
      let seen = Seen()
      return body(connection, seen, Unmanaged.passUnretained(seen).toOpaque())
    }
  }

  static func read(_ connection: UnsafeMutablePointer<ch2_connection>, requests: Bool, _ bytes: [UInt8],
                   now: UInt64, _ context: UnsafeMutableRawPointer) -> ch2_status {
    bytes.withUnsafeBufferPointer { ch2_connection_read(connection, requests ? 1 : 0, $0.baseAddress, $0.count, now, context) }
  }

  static let get: [UInt8] = [0x82, 0x84, 0x86, 0x41, 0x09] + Array("127.0.0.1".utf8)  // GET / http :authority
  static let ok: [UInt8] = [0x88]  // :status 200
  static let trailers: [UInt8] = [0x40, 0x0b] + Array("grpc-status".utf8) + [0x01, 0x35]  // grpc-status 5

  @Test("a conversation: complete streams, a reset, a refusal by GOAWAY, and streams still open at the close")
  func conversation() {
    Self.withConnection { connection, seen, context in
      let client = clientPreface + frame(1, flags: 5, stream: 1, Self.get) + frame(1, flags: 5, stream: 3, Self.get)
        + frame(1, flags: 4, stream: 5, Self.get) + frame(1, flags: 5, stream: 7, Self.get)
        + frame(1, flags: 5, stream: 9, Self.get)
      #expect(Self.read(connection, requests: true, client, now: 100, context) == CH2_OK)
      #expect(seen.heads == [1, 3, 5, 7, 9] && seen.records.isEmpty)
      let server = frame(4, stream: 0, [0, 1, 0, 0, 0x10, 0]) + frame(1, flags: 4, stream: 1, Self.ok)
        + frame(0, flags: 1, stream: 1, Array(repeating: 0x61, count: 10)) + frame(3, stream: 3, [0, 0, 0, 8])
        + frame(1, flags: 4, stream: 5, Self.ok) + frame(1, flags: 5, stream: 5, Self.trailers)
        + frame(7, stream: 0, [0, 0, 0, 5, 0, 0, 0, 0])  // GOAWAY: the last stream processed is 5
      #expect(Self.read(connection, requests: false, server, now: 200, context) == CH2_OK)
      // 1 complete; 3 reset; 5's response ended, its request is still open; 7 and 9 refused.
      #expect(seen.records.map(\.id) == [1, 3, 7, 9])
      let first = seen.records[0]
      #expect(first.status == 200 && first.complete && first.method == "GET")
      #expect(first.requestBytes == UInt64(9 + Self.get.count) && first.responseBytes == UInt64(9 + 1 + 9 + 10))
      #expect(seen.records[1].status == 0 && !seen.records[1].complete && seen.records[1].state & 4 != 0)
      #expect(seen.records[2].state & 4 != 0 && seen.records[3].state & 4 != 0)
      #expect(connection.pointee.responses.decoder.limit == 4096 && connection.pointee.requests.decoder.limit == 4096)
      ch2_connection_finish(connection, 300, context)
      #expect(seen.records.map(\.id) == [1, 3, 7, 9, 5])
      #expect(seen.records[4].grpcStatus == 5 && seen.records[4].status == 200 && seen.records[4].complete)
      #expect(ch2_connection_recorded(connection) == 5 && seen.recordedTwice == 0)
      ch2_connection_finish(connection, 400, context)
      #expect(seen.records.count == 5)
    }
  }

  @Test("random frames on both directions, in random pieces: each stream recorded once, when both halves ended")
  func randomFrames() {
    var rng = SplitMix64(seed: 0x5354_5245_414D)
    for _ in 0..<400 {
      Self.withConnection { connection, seen, context in
        var client = clientPreface, server: [UInt8] = []
        for _ in 0..<Int(rng.next() % 60) {
          let id = UInt32(rng.next() % 300)
          let flags = Int(rng.next() % 2) | (rng.next() % 5 == 0 ? 0 : 4)
          let toServer = rng.next() % 2 == 0
          let bytes: [UInt8]
          switch rng.next() % 9 {
          case 0, 1, 2: bytes = frame(1, flags: flags, stream: id, toServer ? Self.get : Self.ok)
          case 3, 4: bytes = frame(0, flags: flags & 1, stream: id, [1, 2, 3])
          case 5: bytes = frame(3, stream: id, [0, 0, 0, 8])
          case 6: bytes = frame(7, stream: 0, bigEndian(id) + [0, 0, 0, 0])
          case 7: bytes = frame(5, flags: 4, stream: id, bigEndian(UInt32(rng.next() % 300)) + Self.get)
          default: bytes = frame(Int(rng.next() % 10), stream: id, [0, 0, 0, 1])
          }
          if toServer { client += bytes } else { server += bytes }
        }
        // Each direction in random pieces, the two interleaved.
        var sent = 0, received = 0, now: UInt64 = 1
        var stopped = (requests: false, responses: false)
        while sent < client.count || received < server.count {
          now += 1
          let requests = received == server.count || (sent < client.count && rng.next() % 2 == 0)
          let bytes = requests ? client : server
          let at = requests ? sent : received
          let count = min(bytes.count - at, 1 + Int(rng.next() % 40))
          if !(requests ? stopped.requests : stopped.responses) {
            let status = Self.read(connection, requests: requests, Array(bytes[at..<at + count]), now: now, context)
            if status != CH2_OK { if requests { stopped.requests = true } else { stopped.responses = true } }
          }
          if requests { sent += count } else { received += count }
        }
        ch2_connection_finish(connection, now + 1, context)
        #expect(seen.recordedTwice == 0)
        #expect(seen.records.allSatisfy { $0.state & 3 == 3 })
        #expect(ch2_connection_recorded(connection) == UInt64(seen.records.count))
        // Nothing is left open: another close records nothing.
        let count = seen.records.count
        ch2_connection_finish(connection, now + 2, context)
        #expect(seen.records.count == count)
      }
    }
  }
}

