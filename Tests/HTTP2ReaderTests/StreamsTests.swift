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

  static func callbacks(borrowing: Bool) -> ch2_stream_callbacks {
    var callbacks = Self.callbacks
    if borrowing { callbacks.more_slots = { BorrowedTables.randomFrames.take() } }
    return callbacks
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
    },
    more_slots: nil)

  /// A fresh connection whose streams this suite's callbacks see, for the body.
  static func withConnection<T>(
    borrowing: Bool = false, _ body: (UnsafeMutablePointer<ch2_connection>, Seen, UnsafeMutableRawPointer) -> T
  ) -> T {
    let seen = Seen()
    return withFreshConnection(generation: 7, callbacks: callbacks(borrowing: borrowing)) {
      body($0, seen, Unmanaged.passUnretained(seen).toOpaque())
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
      ch2_connection_finish(connection, 300, context)
      #expect(seen.records.map(\.id) == [1, 3, 7, 9, 5])
      #expect(seen.records[4].grpcStatus == 5 && seen.records[4].status == 200 && seen.records[4].complete)
      #expect(ch2_connection_recorded(connection) == 5 && seen.recordedTwice == 0)
      ch2_connection_finish(connection, 400, context)
      #expect(seen.records.count == 5)
    }
  }

  /// With `crowded`, the streams share four places of each stream map (ids 256 apart): the
  /// connection borrows every table it may, and streams past them take older ones' slots over.
  @Test("random frames on both directions, in random pieces: each stream recorded once, when both halves ended",
        arguments: [false, true])
  func randomFrames(crowded: Bool) {
    var rng = SplitMix64(seed: crowded ? 0x4352_4F57_4445_44 : 0x5354_5245_414D)
    var borrowedMost: UInt32 = 0, lostMost: UInt32 = 0
    for _ in 0..<400 {
      Self.withConnection(borrowing: crowded) { connection, seen, context in
        var client = clientPreface, server: [UInt8] = []
        for index in 0..<Int(rng.next() % (crowded ? 400 : 60)) {
          // Crowded: ids mostly growing, a few of them at each of four places.
          let id = crowded ? UInt32(index / 3 + Int(rng.next() % 3)) * 256 + UInt32(rng.next() % 4) : UInt32(rng.next() % 300)
          let ends = rng.next() % (crowded ? 8 : 2) == 0  // END_STREAM: crowded streams stay open longer
          let flags = (ends ? 1 : 0) | (rng.next() % 5 == 0 ? 0 : 4)
          let toServer = rng.next() % 2 == 0
          let bytes: [UInt8]
          switch rng.next() % (crowded ? 8 : 9) {  // crowded: no frames of random types, which stop a direction
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
        borrowedMost = max(borrowedMost, connection.pointee.borrowed_count)
        lostMost = max(lostMost, connection.pointee.streams_lost)
        ch2_connection_finish(connection, now + 1, context)
        #expect(seen.recordedTwice == 0)
        #expect(seen.records.allSatisfy { $0.state & 3 == 3 })
        #expect(ch2_connection_recorded(connection) == UInt64(seen.records.count))
        #expect(connection.pointee.borrowed_count == 0)
        // Nothing is left open: another close records nothing.
        let count = seen.records.count
        ch2_connection_finish(connection, now + 2, context)
        #expect(seen.records.count == count)
      }
    }
    if crowded { #expect(borrowedMost == CH2_BORROWED_TABLES && lostMost > 0, "\(borrowedMost) \(lostMost)") }
  }

  /// What a connection records of the client's `client` bytes and the server's: `server`
  /// contiguous, or the first `total` bytes of `pieces` as iovecs (a writev's result), but for the
  /// `skip` junk bytes they begin with.
  static func records(client: [UInt8], server: [UInt8], pieces: [[UInt8]]? = nil, skip: Int = 0, total: Int = 0)
    -> (records: [String], frames: UInt64, status: UInt8)
  {
    withConnection { connection, seen, context in
      _ = read(connection, requests: true, client, now: 1, context)
      if let pieces {
        let buffers = pieces.map { piece -> UnsafeMutableRawBufferPointer in
          let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: max(piece.count, 1), alignment: 1)
          piece.withUnsafeBytes { buffer.copyMemory(from: $0) }
          return buffer
        }
        defer { buffers.forEach { $0.deallocate() } }
        var vector = zip(buffers, pieces).map { iovec(iov_base: $0.0.baseAddress, iov_len: $0.1.count) }
        _ = ch2_connection_read_vector(connection, 0, &vector, Int32(vector.count), skip, total, 2, context)
      } else {
        _ = read(connection, requests: false, server, now: 2, context)
      }
      ch2_connection_finish(connection, 3, context)
      let lines = seen.records.map { "\($0.id) \($0.state) \($0.status) \($0.requestBytes) \($0.responseBytes) \($0.complete) \($0.grpcStatus)" }
      return (lines, connection.pointee.responses.reader.frames, connection.pointee.responses.reader.status)
    }
  }

  @Test("a server's frames in a vector, as nginx writes them (header and payload in two pieces) or in random pieces: the records contiguous bytes give")
  func vectorPieces() {
    var rng = SplitMix64(seed: 0x5645_4354_4F52)
    var splitReads = 0
    for round in 0..<300 {
      var client = clientPreface
      for id in stride(from: 1 as UInt32, through: 39, by: 2) { client += frame(1, flags: 5, stream: id, Self.get) }
      var server: [[UInt8]] = []
      for _ in 0..<Int(rng.next() % 40) {
        let id = UInt32(1 + 2 * (rng.next() % 20))
        switch rng.next() % 10 {
        case 0, 1, 2: server.append(frame(1, flags: 4 | Int(rng.next() % 2), stream: id, rng.next() % 3 == 0 ? Self.trailers : Self.ok))
        case 3, 4, 5: server.append(frame(0, flags: Int(rng.next() % 2), stream: id, Array(repeating: 7, count: Int(rng.next() % 30))))
        case 6: server.append(frame(3, stream: id, [0, 0, 0, 8]))
        case 7: server.append(frame(8, stream: rng.next() % 2 == 0 ? 0 : id, [0, 0, 1, 0]))
        case 8: server.append(frame(1, flags: 0x0c, stream: id, [2] + Self.ok + [0, 0]))  // padded: read in parts
        default: server.append(rng.next() % 4 == 0 ? frame(4, stream: 0, [0, 1, 0]) : frame(6, stream: 0, Array(repeating: 0, count: 8)))
        }
      }
      // nginx's pieces: each frame's header, then its payload; now and then frames merged or cut anywhere.
      var pieces: [[UInt8]] = []
      for bytes in server {
        if rng.next() % 5 == 0, !pieces.isEmpty { pieces[pieces.count - 1] += bytes; continue }
        pieces.append(Array(bytes.prefix(9)))
        if bytes.count > 9 { pieces.append(Array(bytes.dropFirst(9))) }
      }
      if round % 3 == 0, !pieces.isEmpty {  // a cut anywhere, and an empty piece
        let at = Int(rng.next() % UInt64(pieces.count))
        let cut = Int(rng.next() % UInt64(pieces[at].count + 1))
        pieces[at...at] = [Array(pieces[at].prefix(cut)), [], Array(pieces[at].dropFirst(cut))]
      }
      let skip = round % 4 == 1 ? Int(rng.next() % 12) : 0
      if skip > 0 { pieces.insert(Array(repeating: 0x47, count: skip), at: 0) }
      // A writev that moved all of its bytes, or (one round in three) part of them.
      let bytes = server.flatMap { $0 }
      let moved = round % 3 == 2 ? Int(rng.next() % UInt64(bytes.count + 1)) : bytes.count
      let contiguous = Self.records(client: client, server: Array(bytes.prefix(moved)))
      let vector = Self.records(client: client, server: [], pieces: pieces, skip: skip, total: skip + moved)
      #expect(vector.records == contiguous.records, "round \(round)")
      #expect(vector.frames == contiguous.frames && vector.status == contiguous.status, "round \(round)")
      splitReads += pieces.filter { $0.count == 9 }.count
    }
    #expect(splitReads > 1000)  // the header-then-payload pieces do come
  }

  /// A gRPC call that ended without a grpc-status: the status gRPC's own rules give its end.
  @Test("a gRPC call without trailers: its RST_STREAM's code, its HTTP status, or how the connection ended it")
  func grpcStatusOfEnd() {
    let stream = UnsafeMutablePointer<ch2_stream>.allocate(capacity: 1)
    defer { stream.deallocate() }
    func status(grpc: Bool = true, trailers: Int16 = -1, requestReset: UInt32? = nil, responseReset: UInt32? = nil,
                http: UInt16 = 0, complete: Bool = false, hasResponse: Bool = true) -> Int16 {
      UnsafeMutableRawPointer(stream).initializeMemory(as: UInt8.self, repeating: 0, count: MemoryLayout<ch2_stream>.size)
      stream.pointee.is_grpc = grpc ? 1 : 0
      stream.pointee.grpc_status = trailers
      stream.pointee.request_reset = requestReset.map { UInt8($0 + 1) } ?? 0
      stream.pointee.response_reset = responseReset.map { UInt8($0 + 1) } ?? 0
      stream.pointee.status = http
      stream.pointee.response_complete = complete ? 1 : 0
      return ch2_stream_grpc_status(stream, 1, hasResponse ? 1 : 0)
    }
    #expect(status(trailers: 5, responseReset: 8, http: 200) == 5)  // the trailers' say
    #expect(status(grpc: false, http: 503) == -1)  // no gRPC call
    #expect(status(requestReset: 8, hasResponse: false) == 1)  // the client cancelled: CANCELLED
    #expect(status(responseReset: 7) == 14 && status(responseReset: 11) == 8 && status(responseReset: 12) == 7)
    #expect(status(responseReset: 0, http: 200) == 13 && status(requestReset: 2) == 13)  // any other: INTERNAL
    let byHTTPStatus = [400, 401, 403, 404, 429, 502, 503, 504, 500].map { status(http: UInt16($0), complete: true) }
    #expect(byHTTPStatus == [13, 16, 7, 12, 14, 14, 14, 14, 2])
    #expect(status(http: 200, complete: true) == 2)  // ended without a status: UNKNOWN
    #expect(status(http: 200) == 14 && status() == 14 && status(hasResponse: false) == 14)  // cut short: UNAVAILABLE
  }
}
