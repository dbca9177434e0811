import CNetMonitor
import Glibc
import Testing
import TestSupport

@testable import ElfHookCLI
@testable import NetMonitor

/// `elfhook run` hands the summary each record in its ring slot (`TransactionSummary.add(_: RecordSlot)`),
/// and an http record that repeats the last request is counted from its numbers, never decoded.
/// The same records added decoded (`add(_: Transaction)`) must make the very same summary: these
/// tests feed both, record by record from one slot, and compare everything the summary shows.
@Suite("TransactionSummary from ring slots")
struct SummaryFromSlotsTests {
  /// An http or connection record as the monitor writes it into a slot.
  struct Exchange {
    var method = "GET"
    var host: [UInt8]? = Array("localhost:8080".utf8)
    var target: [UInt8] = Array("/1k.bin".utf8)
    var tls = false
    var status: UInt16 = 200
    var durationNs: UInt64 = 1_000_000
    var firstByteNs: UInt64 = 400_000
    var start: UInt64 = 1_700_000_000_000_000_000
    var connection: UInt64 = 1
    var reused = true
    var pid: Int32 = 7
    /// An HTTP/2 stream whose `:path` the hooks kept as its Huffman code.
    var h2Huffman = false

    var record: RawRecord {
      var record = RawRecord()
      record.kind = RawRecord.Kind.http
      record.pid = pid
      record.startUnixNanoseconds = start
      record.durationNanoseconds = durationNs
      record.httpStatus = status
      record.httpReused = reused
      record.httpFirstByteNanoseconds = status == 0 ? 0 : firstByteNs + 1
      record.httpRequestBytes = 78 + UInt64(target.count)
      record.httpResponseBytes = status == 0 ? 0 : 1_260
      record.core.id = connection
      record.core.role = ConnectionCore.Role.server
      record.core.isTLS = tls ? 1 : 0
      record.core.peer = Self.loopback(port: UInt16(40_000 + connection % 1000))
      let method = Array(method.utf8)
      let target = h2Huffman ? HuffmanReference.encode(target) : target
      if h2Huffman {
        record.httpProtocol = RawRecord.HTTPVersion.h2
        record.streamID = 1
        record.targetIsHuffmanCode = true
      }
      withUnsafeMutableBytes(of: &record.httpRequest.text) { $0.copyBytes(from: method + target + (host ?? [])) }
      record.httpRequest.methodLength = UInt8(method.count)
      record.httpRequest.targetLength = UInt16(target.count)
      record.httpRequest.hostLength = UInt16(host?.count ?? 0)
      return record
    }

    /// The record of the connection the exchange used, written when it closed: a client's, so
    /// that it has setup phases for the slowest requests' breakdown and a row in the host table.
    var connectionRecord: RawRecord {
      var record = RawRecord()
      record.kind = RawRecord.Kind.connection
      record.pid = pid
      record.startUnixNanoseconds = start - 3_000_000
      record.durationNanoseconds = durationNs + 3_000_000
      record.core.id = connection
      record.core.role = ConnectionCore.Role.client
      record.core.hasDNS = 1
      record.core.dnsNanoseconds = 1_250_000
      record.core.connectStart = 10_000
      record.core.connectEnd = 10_000 + 750_000
      record.core.peer = Self.loopback(port: 8080)
      record.core.bytesSent = 300
      record.core.bytesReceived = 4_000
      record.core.httpExchanges = connection % 2
      return record
    }

    static func loopback(port: UInt16) -> PeerAddress {
      var address = cnm_address()
      address.family = UInt16(AF_INET)
      address.port = port
      withUnsafeMutableBytes(of: &address.bytes) { $0.copyBytes(from: [127, 0, 0, 1]) }
      return PeerAddress(address)
    }
  }

  /// The records added to two summaries through one slot, rewritten for each record as a ring's
  /// slot is: in place (`add(slotsFrom:)`, in drains of `drainSizes` records in turn, as a run
  /// drains what has come since the last drain), and decoded. Each path has its own text cache, as
  /// each ring has.
  static func summaries(
    of records: [RawRecord], slowest: Int = 10, drainSizes: [Int] = [1, 3, 700, 40]
  ) -> (inPlace: TransactionSummary, decoded: TransactionSummary) {
    var inPlace = TransactionSummary(slowestCapacity: slowest)
    var decoded = TransactionSummary(slowestCapacity: slowest)
    var slotCache = RecordTextCache()
    var decodingCache = RecordTextCache()
    let slot = UnsafeMutableRawPointer.allocate(byteCount: RawRecord.slotSize, alignment: 16)
    defer { slot.deallocate() }
    let record = slot.bindMemory(to: RawRecord.self, capacity: 1)
    record.initialize(to: RawRecord())
    var next = 0
    var drains = 0
    while next < records.count {
      let end = min(next + drainSizes[drains % drainSizes.count], records.count)
      drains += 1
      let drained = withUnsafeMutablePointer(to: &slotCache) { cache in
        inPlace.add(slotsFrom: { body in
          for raw in records[next..<end] {
            record.pointee = raw
            body(RecordSlot(bytes: UnsafeRawPointer(slot), process: "nginx", cache: cache))
          }
          return end - next
        })
      }
      #expect(drained == end - next)
      for raw in records[next..<end] {
        record.pointee = raw
        #expect(RawRecord.withTransaction(at: slot, process: "nginx", cache: &decodingCache) { decoded.add($0) })
      }
      next = end
    }
    return (inPlace, decoded)
  }

  /// Everything the summary shows or is read for: the terminal summary and live view, and the
  /// numbers behind them.
  static func expectSame(
    _ inPlace: TransactionSummary, _ decoded: TransactionSummary, sourceLocation: SourceLocation = #_sourceLocation
  ) {
    #expect(
      renderSummary(inPlace, width: 160, color: false) == renderSummary(decoded, width: 160, color: false),
      sourceLocation: sourceLocation)
    #expect(
      renderLiveView(inPlace, elapsedSeconds: 2, width: 160) == renderLiveView(decoded, elapsedSeconds: 2, width: 160),
      sourceLocation: sourceLocation)
    #expect(inPlace.records == decoded.records, sourceLocation: sourceLocation)
    #expect(inPlace.span == decoded.span, sourceLocation: sourceLocation)
    #expect(inPlace.errors == decoded.errors, sourceLocation: sourceLocation)
    #expect(Self.numbers(inPlace.requests) == Self.numbers(decoded.requests), sourceLocation: sourceLocation)
    #expect(inPlace.hosts.keys.sorted() == decoded.hosts.keys.sorted(), sourceLocation: sourceLocation)
    for (key, stats) in decoded.hosts {
      let other = inPlace.hosts[key]
      #expect(other.map { Self.numbers($0.http) } == Self.numbers(stats.http), "\(key)", sourceLocation: sourceLocation)
      #expect(other?.bytesSent == stats.bytesSent && other?.connections == stats.connections, sourceLocation: sourceLocation)
    }
    #expect(Set(inPlace.endpoints.keys) == Set(decoded.endpoints.keys), sourceLocation: sourceLocation)
    for (key, stats) in decoded.endpoints {
      #expect(inPlace.endpoints[key].map(Self.numbers) == Self.numbers(stats), "\(key)", sourceLocation: sourceLocation)
    }
    #expect(inPlace.slowest.requests.map(\.http) == decoded.slowest.requests.map(\.http), sourceLocation: sourceLocation)
    #expect(
      inPlace.slowest.requests.map { $0.phases.total } == decoded.slowest.requests.map { $0.phases.total },
      sourceLocation: sourceLocation)
    #expect(decoded.recordsCountedInPlace == 0, sourceLocation: sourceLocation)
  }

  struct Numbers: Equatable {
    var requests: Int
    var errors: Int
    var sent: UInt64
    var received: UInt64
    var count: Int
    var exact: Bool
    var p50: Double?
    var p95: Double?
    var maximum: Double
  }

  static func numbers(_ stats: RequestStats) -> Numbers {
    let quantiles = stats.durations.quantiles
    return Numbers(
      requests: stats.requests, errors: stats.errors, sent: stats.bytesSent, received: stats.bytesReceived,
      count: stats.durations.count, exact: stats.durations.isExact, p50: quantiles?.p50, p95: quantiles?.p95,
      maximum: stats.durations.maximum)
  }

  @Test("a repeat is counted in place; a new target, Host, scheme or method, or a slowest candidate, is decoded")
  func repeatsAndWhatBreaksThem() {
    let a = Exchange()
    var records: [RawRecord] = []
    var inPlace: [Bool] = []
    /// Records 2 ms apart, from 100 ms after `a.start`; `earlier` moves one back.
    func add(_ exchange: Exchange, countedInPlace: Bool, durationMs: Double = 1, earlier: UInt64 = 0) {
      var exchange = exchange
      exchange.durationNs = UInt64(durationMs * 1_000_000)
      exchange.start = a.start + 100_000_000 + UInt64(records.count) * 2_000_000 - earlier
      records.append(exchange.record)
      inPlace.append(countedInPlace)
    }
    var first = a
    first.reused = false
    add(first, countedInPlace: false, durationMs: 5)  // the first record: nothing to repeat
    add(a, countedInPlace: false, durationMs: 4)  // the slowest list (2) is not full yet
    add(a, countedInPlace: true)
    var error = a
    error.status = 503
    add(error, countedInPlace: true)  // a 5xx is an error, counted from the status alone
    add(error, countedInPlace: true)  // and its failure group, known now, from the slot's numbers
    var unanswered = a
    unanswered.status = 0
    add(unanswered, countedInPlace: true)
    add(a, countedInPlace: false, durationMs: 9)  // among the slowest: kept whole
    add(a, countedInPlace: true, durationMs: 4.5, earlier: 50_000_000)  // starts before every other: the span grows
    var b = a
    b.target = Array("/b?token=secret".utf8)
    add(b, countedInPlace: false)
    add(b, countedInPlace: true)
    add(a, countedInPlace: true)  // no repeat, but its route (method, Host, scheme, path) is known
    var https = a
    https.tls = true
    add(https, countedInPlace: false)
    add(https, countedInPlace: true)
    var noHost = a
    noHost.host = nil
    add(noHost, countedInPlace: false)
    add(noHost, countedInPlace: true)
    var upperCase = a
    upperCase.host = Array("LOCALHOST:8080".utf8)  // the same host row, other bytes
    add(upperCase, countedInPlace: false)
    add(upperCase, countedInPlace: true)
    var post = a
    post.method = "POST"
    add(post, countedInPlace: false)
    records.append(post.connectionRecord)  // another kind between two repeats does not break them
    inPlace.append(false)
    add(post, countedInPlace: true)
    var long = a
    long.target = Array("/a/target/longer/than/the/text/cache/keeps/inline?x=1".utf8)
    add(long, countedInPlace: false)
    add(long, countedInPlace: true)
    var longer = long
    longer.target[40] = UInt8(ascii: "Z")
    add(longer, countedInPlace: false)
    add(longer, countedInPlace: true)
    var invalid = a
    invalid.target = [0x2F, 0xFF]
    add(invalid, countedInPlace: false)
    add(invalid, countedInPlace: true)
    var otherInvalid = a
    otherInvalid.target = [0x2F, 0xFE]  // decodes to the same string, from other bytes
    add(otherInvalid, countedInPlace: false)
    add(otherInvalid, countedInPlace: true)
    var otherProcess = otherInvalid
    otherProcess.pid = 8
    otherProcess.connection = 99
    add(otherProcess, countedInPlace: true)  // pid and connection are not part of the request

    let (summary, decoded) = Self.summaries(of: records, slowest: 2)
    Self.expectSame(summary, decoded)
    #expect(summary.recordsCountedInPlace == inPlace.filter { $0 }.count)
    // Record by record: the count grows exactly where a repeat is expected.
    var counted: [Bool] = []
    for end in 1...records.count {
      let prefix = Self.summaries(of: Array(records[..<end]), slowest: 2)
      Self.expectSame(prefix.inPlace, prefix.decoded)
      counted.append(prefix.inPlace.recordsCountedInPlace > counted.filter { $0 }.count)
    }
    #expect(counted == inPlace)
  }

  @Test("past the endpoint limit: a repeated path counted in place lands in the shared row")
  func endpointLimit() {
    var records: [RawRecord] = []
    for index in 0..<(TransactionSummary.maximumEndpoints + 5) {
      var exchange = Exchange()
      exchange.target = Array("/item/\(index)".utf8)
      exchange.start += UInt64(index) * 1_000
      records.append(exchange.record)
      records.append(exchange.record)
    }
    let (summary, decoded) = Self.summaries(of: records)
    Self.expectSame(summary, decoded)
    #expect(summary.endpoints.count == TransactionSummary.maximumEndpoints + 1)
    #expect(summary.recordsCountedInPlace >= TransactionSummary.maximumEndpoints)
  }

  @Test("a request to a known route is counted in place, whatever its query, size, status or duration")
  func knownRoutes() {
    var records: [RawRecord] = []
    var exchange = Exchange()
    let paths = ["/v/1.bin", "/v/2.bin", "/a;jsessionid=1", "/a;jsessionid=2", "http://user:pw@proxy.example/x", "*", "example.com:443"]
    for index in 0..<2_000 {
      let path = paths[index % paths.count]
      // A query of its own each time, now and then with a `://` in it (no scheme) or a fragment.
      let query = index % 5 == 0 ? "?next=http://other.example/elsewhere&n=\(index)" : index % 7 == 0 ? "#frag\(index)" : "?page=\(index)&session=\(index * 31)"
      exchange.target = Array((path.hasPrefix("/") ? path + query : path).utf8)
      exchange.status = [200, 404, 503, 0][index % 4]
      exchange.method = index % 11 == 0 ? "POST" : "GET"
      exchange.tls = index % 13 == 0
      exchange.durationNs = UInt64(1 + index % 97) * 10_000
      exchange.start += 1_000
      records.append(exchange.record)
    }
    let (summary, decoded) = Self.summaries(of: records)
    Self.expectSame(summary, decoded)
    // Decoded: each route once (7 paths × 2 methods × 2 schemes at most), and the slowest so far.
    #expect(summary.recordsCountedInPlace > 1_800)
    #expect(summary.endpoints.keys.contains { $0.path == "/v/1.bin" })
    #expect(!summary.endpoints.keys.contains { $0.path.contains("elsewhere") || $0.path.contains("page") })
  }

  @Test("HTTP/2 paths kept as their Huffman codes: the same summary, known routes counted in place")
  func huffmanRoutes() {
    var records: [RawRecord] = []
    var exchange = Exchange()
    exchange.h2Huffman = true
    for index in 0..<1_000 {
      exchange.target = Array("/v/\(index % 9).bin?page=\(index)&session=\(index * 7919)".utf8)
      exchange.tls = index % 3 == 0
      exchange.status = [200, 404][index % 2]
      exchange.durationNs = UInt64(1 + index % 89) * 10_000
      exchange.start += 1_000
      records.append(exchange.record)
    }
    let (summary, decoded) = Self.summaries(of: records)
    Self.expectSame(summary, decoded)
    #expect(summary.recordsCountedInPlace > 850)
    #expect(summary.endpoints.keys.contains { $0.path == "/v/3.bin" })
  }

  @Test("more routes than the table holds: the ones it forgot are decoded again, with the same summary")
  func manyRoutes() {
    var records: [RawRecord] = []
    var exchange = Exchange()
    // Twice the table, in three passes, interleaved with one route asked for all the time.
    for pass in 0..<3 {
      for index in 0..<(2 * RouteRows.capacity) {
        exchange.target = Array("/item/\(index)?pass=\(pass)".utf8)
        exchange.host = Array("h\(index % 3).example".utf8)
        exchange.start += 1_000
        records.append(exchange.record)
        if index % 4 == 0 {
          var hot = Exchange()
          hot.target = Array("/health?t=\(index)".utf8)
          hot.start = exchange.start + 1
          records.append(hot.record)
        }
      }
    }
    let (summary, decoded) = Self.summaries(of: records, drainSizes: [4_096, 3, 1_000])
    Self.expectSame(summary, decoded)
    // /health and 1,999 items, then each host's row of other paths.
    #expect(summary.endpoints.count == TransactionSummary.maximumEndpoints + 3)
    #expect(summary.recordsCountedInPlace > 6_000)
  }

  @Test("a seeded mix of requests, statuses, durations, processes and connection records (30,000)")
  func randomMix() {
    var random = SplitMix64(seed: 0xE1F_400C)
    let hosts: [[UInt8]?] = [Array("localhost:8080".utf8), Array("api.example.com".utf8), nil, Array("[::1]:8443".utf8)]
    let targets = ["/1k.bin", "/1k.bin", "/1k.bin", "/api/v1/users/42?session=abc", "/", "*"].map { Array($0.utf8) }
    let statuses: [UInt16] = [200, 200, 200, 200, 204, 304, 404, 500, 503, 0]
    var records: [RawRecord] = []
    var exchange = Exchange()
    for index in 0..<30_000 {
      // Mostly the same request, as a benchmark's server sees: change it one time in twenty.
      if random.next(20) == 0 {
        exchange.host = hosts[random.next(hosts.count)]
        exchange.target = targets[random.next(targets.count)]
        exchange.method = random.next(4) == 0 ? "POST" : "GET"
        exchange.tls = random.next(3) == 0
      }
      exchange.pid = random.next(8) == 0 ? 9 : 7
      exchange.connection = UInt64(random.next(64))
      exchange.reused = random.next(10) != 0
      exchange.status = statuses[random.next(statuses.count)]
      // Durations spread over four orders of magnitude, so the slowest list keeps changing early on.
      exchange.durationNs = UInt64(random.next(1_000)) * UInt64(1 << random.next(14)) + 1
      exchange.firstByteNs = exchange.durationNs / 2
      exchange.start = 1_700_000_000_000_000_000 + UInt64(index) * 20_000 + UInt64(random.next(1_000_000))
      records.append(exchange.record)
      if random.next(50) == 0 { records.append(exchange.connectionRecord) }
    }
    for slowest in [0, 10] {
      let (summary, decoded) = Self.summaries(of: records, slowest: slowest, drainSizes: [1_000, 17, 256, 4_096, 1])
      Self.expectSame(summary, decoded)
      #expect(summary.recordsCountedInPlace > 20_000)
      // Past 10,000 durations a row counts them in a histogram: both paths crossed it.
      #expect(!summary.requests.durations.isExact)
    }
  }
}

extension SplitMix64 {
  /// A number below `bound`.
  mutating func next(_ bound: Int) -> Int { Int(next() % UInt64(bound)) }
}
