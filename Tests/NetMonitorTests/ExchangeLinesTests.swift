@preconcurrency import CNetMonitor
import Glibc
import Testing

@testable import NetMonitor

/// The lines the hooks prefetch for an exchange (`ExchangeLines`), and the table state that sends a
/// connection's calls to the hooks that prefetch them (`CNM_EXCHANGING`).
@Suite("exchange lines prefetched", .serialized)
struct ExchangeLinesTests {
  @Test("whole lines inside the entry and the record slot, few enough for the C table, covering what an exchange reads")
  func lines() throws {
    let entry = ExchangeLines.entryOffsets
    let record = ExchangeLines.recordOffsets
    for (offsets, size) in [(entry, ConnectionTable.entryBytes), (record, RawRecord.slotSize)] {
      #expect(!offsets.isEmpty && offsets.count <= Int(CNM_PREFETCH_LINES_MAX))
      #expect(offsets.allSatisfy { $0 % 64 == 0 && $0 >= 0 && $0 < size })
      #expect(offsets == offsets.sorted() && Set(offsets).count == offsets.count)
      #expect(offsets.allSatisfy { $0 <= Int(UInt16.max) })
    }
    func line(_ offset: Int) -> Int { offset / 64 * 64 }
    let core = MemoryLayout<ConnectionSlot>.offset(of: \.core)!
    let http = MemoryLayout<ConnectionSlot>.offset(of: \.http)!
    let requests = http + MemoryLayout<HTTPExchanges>.offset(of: \.requests)!
    let responses = http + MemoryLayout<HTTPExchanges>.offset(of: \.responses)!
    let read = [
      0,  // the hooks' counters and watch flags
      core + MemoryLayout<ConnectionCore>.offset(of: \.startNanoseconds)!,
      core + MemoryLayout<ConnectionCore>.offset(of: \.role)!,
      core + MemoryLayout<ConnectionCore>.offset(of: \.phase)!,
      http + MemoryLayout<HTTPExchanges>.offset(of: \.requestsBegun)!,
      http + MemoryLayout<HTTPExchanges>.offset(of: \.responsesEnded)!,
      requests + MemoryLayout<HTTPStreamParser>.offset(of: \.phase)!,
      responses + MemoryLayout<HTTPStreamParser>.offset(of: \.phase)!,
      requests + MemoryLayout<HTTPStreamParser>.offset(of: \.headMemo)!,
      responses + MemoryLayout<HTTPStreamParser>.offset(of: \.headMemo)!,
    ]
    for offset in read { #expect(entry.contains(line(offset)), "entry byte \(offset)") }
    let written = [
      MemoryLayout<RawRecord>.offset(of: \.kind)!,
      MemoryLayout<RawRecord>.offset(of: \.httpResponseBytes)!,
      MemoryLayout<RawRecord>.offset(of: \.core)! + ConnectionCore.reusedCopyStart,
      MemoryLayout<RawRecord>.offset(of: \.httpRequest)!,
    ]
    let text = MemoryLayout<RawRecord>.offset(of: \.httpRequest)! + MemoryLayout<HTTPHead>.offset(of: \.text)!
    for offset in written + Array(stride(from: text, to: text + ExchangeLines.recordTextBytes, by: 8)) {
      #expect(record.contains(line(offset)), "record byte \(offset)")
    }
    // An http record on a reused connection: three lines (RecordLayoutTests), and the text's next two.
    #expect(record.count == 5)
    // An HTTP/2 stream's: those and its id's line.
    let stream = ExchangeLines.streamRecordOffsets
    #expect(stream.count <= Int(CNM_PREFETCH_LINES_MAX) && stream == stream.sorted())
    #expect(Set(record).isSubset(of: stream) && stream.contains(line(MemoryLayout<RawRecord>.offset(of: \.streamID)!)))
    #expect(stream.count == 6)
  }

  @Test("a connection is exchanging from its first exchange on, and only tracked once a parser gives up")
  func state() throws {
    let server = try LoopbackServer()
    func state(_ fd: Int32) -> UInt8 { cnm_tracked.unsafelyUnwrapped[Int(fd)] }
    let request = "GET /bytes/100 HTTP/1.1\r\nHost: 127.0.0.1:\(server.port)\r\n\r\n"
    var states: [UInt8] = []
    let (_, records) = try SharedMonitor.records { () throws -> Void in
      let fd = try Sockets.connect(server.port)
      states.append(state(fd))
      for _ in 0..<2 {
        try Sockets.sendAll(fd, request)
        _ = try Sockets.receiveResponses(fd, count: 1)
        states.append(state(fd))
      }
      try Sockets.sendAll(fd, "\u{1}\u{2} not a request\r\n\r\n")  // the request parser gives up
      states.append(state(fd))
      close(fd)
    }
    #expect(states == [UInt8(CNM_TRACKED), UInt8(CNM_EXCHANGING), UInt8(CNM_EXCHANGING), UInt8(CNM_TRACKED)])
    let connection = try #require(records.connections.first { $0.peerPort == server.port })
    let exchanges = records.http.filter { $0.connectionId == connection.id }
    #expect(exchanges.map(\.status) == [200, 200])
    #expect(exchanges.map(\.target) == ["/bytes/100", "/bytes/100"])
  }
}
