import CHTTP2
import Foundation
import Testing
import TestSupport

/// streams.c's stream slots: a stream holds a slot only while it is open, the slot freed last is
/// taken next (so a connection's streams keep to as many slots as they have in flight), 128 streams
/// in flight are followed exactly in the connection's own table and 1,024 with the tables it
/// borrows, and the two directions, read by two threads at once, agree on every stream's slot.
@Suite("HTTP/2 stream slots", .serialized)  // one pool of tables to borrow (BorrowedTables)
struct StreamSlotsTests {
  /// What the callbacks saw, from either thread.
  final class Seen: @unchecked Sendable {
    let lock = NSLock()
    var heads = 0
    var records: [(id: UInt32, slot: Int, status: UInt16, complete: Bool, hasRequest: Bool)] = []  // slot: its address
  }

  /// The suite's callbacks; with `borrowing`, a connection borrows tables from ``BorrowedTables``.
  static func callbacks(borrowing: Bool) -> ch2_stream_callbacks {
    ch2_stream_callbacks(
      take_request_head: { context, _, stream, _ in
        let seen = Unmanaged<Seen>.fromOpaque(context!).takeUnretainedValue()
        stream!.pointee.has_head = 1
        seen.lock.withLock { seen.heads += 1 }
      },
      record: { context, connection, stream, id, _ in
        let seen = Unmanaged<Seen>.fromOpaque(context!).takeUnretainedValue()
        let tag = ch2_stream_tag(connection!, id)
        let hasRequest = stream!.pointee.request_tag == tag && stream!.pointee.has_head != 0
        let answered = stream!.pointee.response_tag == tag
        let record = (id, Int(bitPattern: stream!), answered ? stream!.pointee.status : 0,
                      answered && stream!.pointee.response_complete != 0, hasRequest)
        seen.lock.withLock { seen.records.append(record) }
      },
      more_slots: borrowing ? { BorrowedTables.slots.take() } : nil)
  }

  /// A fresh connection whose streams this suite's callbacks see, for the body.
  static func withConnection<T>(
    borrowing: Bool = false, _ body: (UnsafeMutablePointer<ch2_connection>, Seen, UnsafeMutableRawPointer) -> T
  ) -> T {
    let seen = Seen()
    return withFreshConnection(generation: 9, callbacks: callbacks(borrowing: borrowing)) {
      body($0, seen, Unmanaged.passUnretained(seen).toOpaque())
    }
  }

  static func read(_ connection: UnsafeMutablePointer<ch2_connection>, requests: Bool, _ bytes: [UInt8],
                   _ context: UnsafeMutableRawPointer) {
    let status = bytes.withUnsafeBufferPointer { ch2_connection_read(connection, requests ? 1 : 0, $0.baseAddress, $0.count, 1, context) }
    #expect(status == CH2_OK)
  }

  static let get: [UInt8] = [0x82, 0x84, 0x86, 0x41, 0x09] + Array("127.0.0.1".utf8)  // GET / http :authority
  static let ok: [UInt8] = [0x88]  // :status 200
  static func request(_ id: UInt32) -> [UInt8] { frame(1, flags: 5, stream: id, get) }
  static func response(_ id: UInt32) -> [UInt8] { frame(1, flags: 4, stream: id, ok) + frame(0, flags: 1, stream: id, [1, 2, 3]) }

  @Test("a connection's streams keep to as many slots as they have in flight: the slot freed last is taken next")
  func slotsInFlight() {
    var rng = SplitMix64(seed: 0x534C_4F54)
    for inFlight in [1, 2, 10, 37] {
      Self.withConnection { connection, seen, context in
        Self.read(connection, requests: true, clientPreface, context)
        var opened: [UInt32] = [], next: UInt32 = 1
        while next < 4000 || !opened.isEmpty {
          if next < 4000 && opened.count < inFlight {
            Self.read(connection, requests: true, Self.request(next), context)
            opened.append(next)
            next += 2
          } else {  // the server answers one of the open streams, any of them (none left 100 streams behind)
            let oldest = next - opened[0] > 200
            let id = opened.remove(at: oldest ? 0 : Int(rng.next() % UInt64(opened.count)))
            Self.read(connection, requests: false, Self.response(id), context)
          }
        }
        #expect(seen.records.count == 2000 && seen.heads == 2000)
        #expect(seen.records.allSatisfy { $0.status == 200 && $0.complete && $0.hasRequest })
        #expect(Set(seen.records.map(\.slot)).count == inFlight, "\(inFlight) in flight")
        ch2_connection_finish(connection, 2, context)
        #expect(seen.records.count == 2000)
      }
    }
  }

  @Test("128 streams in flight recorded exactly; a stream opened where one 128 older is still open takes its slot; a late frame opens nothing")
  func fullTable() {
    Self.withConnection { connection, seen, context in
      Self.read(connection, requests: true, clientPreface, context)
      for id in stride(from: 1 as UInt32, through: 255, by: 2) { Self.read(connection, requests: true, Self.request(id), context) }
      #expect(seen.heads == 128 && ch2_stream_find(connection, 255) != nil)
      // Stream 257 has stream 1's place while 1 is still open: it takes 1's slot, and 1 is lost.
      Self.read(connection, requests: true, Self.request(257), context)
      for id in stride(from: 1 as UInt32, through: 257, by: 2) { Self.read(connection, requests: false, Self.response(id), context) }
      #expect(seen.records.map(\.id) == Array(stride(from: 3 as UInt32, through: 257, by: 2)))
      #expect(seen.records.allSatisfy { $0.status == 200 && $0.complete && $0.hasRequest })
      #expect(Set(seen.records.map(\.slot)).count == 128)
      // A recorded stream holds no slot; frames of it, and of the stream 257 replaced, open
      // nothing and record nothing.
      #expect(ch2_stream_find(connection, 3) == nil && ch2_stream_find(connection, 1) == nil)
      Self.read(connection, requests: true, Self.request(3) + Self.request(1), context)
      Self.read(connection, requests: false, Self.response(3) + Self.response(1), context)
      #expect(seen.heads == 129)
      // A server-initiated stream (a push) at a place a client stream had.
      let pushPlace = frame(5, flags: 4, stream: 259, bigEndian(256) + Self.get)  // even 256 sits at odd 129's place
      Self.read(connection, requests: false, Self.response(259).prefix(9 + 1) + pushPlace, context)
      Self.read(connection, requests: true, Self.request(259), context)
      Self.read(connection, requests: false, frame(0, flags: 1, stream: 259, []) + Self.response(256), context)
      #expect(seen.records.suffix(2).map(\.id) == [259, 256])
      ch2_connection_finish(connection, 2, context)
      #expect(seen.records.count == 130 && ch2_connection_recorded(connection) == 130)
      #expect(connection.pointee.streams_lost == 1 && ch2_connection_streams(connection) == 131)
    }
  }

  @Test("1,024 streams in flight recorded exactly with seven tables borrowed; the next takes the oldest's slot over; the tables go back at the close")
  func borrowedTables() {
    let tables = BorrowedTables.slots
    let freeBefore = tables.free
    Self.withConnection(borrowing: true) { connection, seen, context in
      Self.read(connection, requests: true, clientPreface, context)
      let open = Array(stride(from: 1 as UInt32, through: 2047, by: 2))
      for id in open { Self.read(connection, requests: true, Self.request(id), context) }
      #expect(seen.heads == 1024 && connection.pointee.borrowed_count == 7 && tables.free == freeBefore - 7)
      #expect(open.allSatisfy { ch2_stream_find(connection, $0) != nil })
      // Stream 2049's place holds an older stream still open in every table: it takes stream 1's slot.
      Self.read(connection, requests: true, Self.request(2049), context)
      #expect(connection.pointee.streams_lost == 1 && ch2_stream_find(connection, 1) == nil)
      for id in open + [2049] { Self.read(connection, requests: false, Self.response(id), context) }
      #expect(seen.records.map(\.id) == Array(stride(from: 3 as UInt32, through: 2049, by: 2)))
      #expect(seen.records.allSatisfy { $0.status == 200 && $0.complete && $0.hasRequest })
      #expect(Set(seen.records.map(\.slot)).count == 1024)
      // Recorded streams, in the own table or a borrowed one, hold no slot: late frames open nothing.
      #expect([3, 1025, 2047].allSatisfy { ch2_stream_find(connection, $0) == nil })
      Self.read(connection, requests: true, Self.request(3) + Self.request(1025) + Self.request(2047), context)
      Self.read(connection, requests: false, Self.response(3) + Self.response(1025), context)
      #expect(seen.heads == 1025 && seen.records.count == 1024)
      // Freed slots of every table are taken again, the own table's first.
      Self.read(connection, requests: true, Self.request(2051), context)
      #expect(ch2_stream_find(connection, 2051) != nil && connection.pointee.borrowed_count == 7)
      ch2_connection_finish(connection, 2, context)
      #expect(ch2_connection_recorded(connection) == 1025 && ch2_connection_streams(connection) == 1026)
      #expect(connection.pointee.borrowed_count == 0 && tables.free == freeBefore)
    }
  }

  @Test("streams open in borrowed tables are ended by a GOAWAY that refuses them and by the close")
  func borrowedTablesEnded() {
    Self.withConnection(borrowing: true) { connection, seen, context in
      Self.read(connection, requests: true, clientPreface, context)
      let open = Array(stride(from: 1 as UInt32, through: 599, by: 2))
      for id in open { Self.read(connection, requests: true, Self.request(id), context) }
      #expect(seen.heads == 300 && connection.pointee.borrowed_count == 2)
      let answered = Set(stride(from: 1 as UInt32, through: 599, by: 20))
      for id in answered.sorted() { Self.read(connection, requests: false, Self.response(id), context) }
      // The server processed the streams up to 399: the client's streams past it never will be.
      Self.read(connection, requests: false, frame(7, stream: 0, bigEndian(399) + bigEndian(0)), context)
      let refused = open.filter { $0 > 399 && !answered.contains($0) }
      #expect(Set(seen.records.map(\.id)) == answered.union(refused))
      ch2_connection_finish(connection, 2, context)
      #expect(seen.records.count == 300 && Set(seen.records.map(\.id)) == Set(open))
      #expect(seen.records.filter(\.complete).map(\.id).sorted() == answered.sorted())
    }
  }

  /// How many streams each direction has read.
  final class Progress: @unchecked Sendable {
    let lock = NSLock()
    var read = [0, 0]
    func of(_ direction: Int) -> Int { lock.withLock { read[direction] } }
    func set(_ direction: Int, _ count: Int) { lock.withLock { read[direction] = count } }
  }

  @Test(
    "the two directions read by two threads at once, either ahead of the other: every stream recorded once, both halves in one slot",
    // 300: past the own table, into borrowed ones; one direction begins once the other has opened 200 streams.
    arguments: [(2, 0), (300, 1), (300, 0)])
  func twoThreads(window: Int, laterDirection: Int) {
    let streams = window > 100 ? 20_000 : 50_000
    Self.withConnection(borrowing: window > 100) { connection, seen, context in
      Self.read(connection, requests: true, clientPreface, context)
      let progress = Progress()
      let address = UInt(bitPattern: connection), contextAddress = UInt(bitPattern: context)
      for direction in 0..<2 {  // 0 reads the requests, 1 the responses
        Thread {
          let connection = UnsafeMutablePointer<ch2_connection>(bitPattern: address)!
          let context = UnsafeMutableRawPointer(bitPattern: contextAddress)!
          while direction == laterDirection && window > 100 && progress.of(1 - direction) < 200 { sched_yield() }
          for index in 0..<streams {
            while index - progress.of(1 - direction) > window { sched_yield() }  // neither runs far ahead
            let id = UInt32(2 * index + 1)
            let bytes = direction == 0 ? Self.request(id) : Self.response(id)
            _ = bytes.withUnsafeBufferPointer {
              ch2_connection_read(connection, direction == 0 ? 1 : 0, $0.baseAddress, $0.count, 1, context)
            }
            progress.set(direction, index + 1)
          }
        }.start()
      }
      while progress.of(0) < streams || progress.of(1) < streams { usleep(1000) }
      #expect((connection.pointee.borrowed_count > 0) == (window > 100) && connection.pointee.streams_lost == 0)
      ch2_connection_finish(connection, 2, context)
      let ids = seen.records.map(\.id)
      #expect(ids.count == streams && Set(ids).count == streams)
      #expect(seen.records.allSatisfy { $0.status == 200 && $0.complete && $0.hasRequest })
      #expect(Set(seen.records.map(\.slot)).count <= 2 * window + 2)
      // Each direction ended streams second (the other's frames had been read first).
      if window < 100 { #expect(connection.pointee.recorded_by_requests > 0 && connection.pointee.recorded_by_responses > 0) }
    }
  }
}
