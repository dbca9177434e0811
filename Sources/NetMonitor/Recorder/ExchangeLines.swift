import CNetMonitor

/// The cache lines an HTTP exchange on a reused connection touches: of its connection's entry
/// (``ConnectionSlot``), and of the record queue's next slot (``RawRecord``). The C hooks of a
/// connection that carries exchanges (`CNM_EXCHANGING`, set by `HTTPExchanges` at its first record
/// and cleared by `Traffic.updateWatch`) prefetch them before a receiving system call
/// (`cnm_set_exchange_lines`, cnetmonitor.h), so that their misses are served while the kernel
/// works instead of one after another in the slow path.
///
/// Measured (perf on nginx under `wrk -t2 -c32`, builds with and without, in alternated turns,
/// ~2.7 M requests each, three runs): nginx's CPU per request −0.18 to −0.34 µs (~1%). Prefetched
/// after the system call instead, the same lines saved nothing: their misses still delayed the
/// slow path that follows at once (BENCHMARKS.md, "Why a record is three cache lines").
enum ExchangeLines {
  /// Bytes of each head the hooks copied prefetched, from its start: a request line with a few
  /// headers, a small response head. The hooks compare a simple exchange's heads with them.
  static let copyBytes = 256
  /// Bytes of each head the Swift parsers remembered (``HTTPHeadMemo``) prefetched: the start of
  /// a request line. Once a connection's exchanges are simple, the hooks take them, and these
  /// lines are for the others (fewer: the C table holds 32 lines).
  static let memoBytes = 128
  /// Bytes of the replay's template prefetched: a record's first line, the connection's identity
  /// and a short request head, which a simple exchange's record copies.
  static let templateBytes = 192

  /// Offsets of the entry's lines: its head (the hooks' counters, their replay, the start of its
  /// template and of the heads they copied), the connection's times and
  /// identity (what a record copies), the exchanges' counters, each parser's state with its head's
  /// numbers and flags (not the text) and the start of its remembered head.
  static var entryOffsets: [Int] {
    var lines = LineSet()
    let core = MemoryLayout<ConnectionSlot>.offset(of: \.core)!
    let http = MemoryLayout<ConnectionSlot>.offset(of: \.http)!
    let template = MemoryLayout<cnm_connection_head>.offset(of: \.replay)!
      + MemoryLayout<cnm_replay_template>.offset(of: \.record)!
    let heads = MemoryLayout<cnm_connection_head>.offset(of: \.replay_request)!
    let requestCopy = MemoryLayout<cnm_connection_head>.offset(of: \.replay_request_bytes)!
    let responseCopy = MemoryLayout<cnm_connection_head>.offset(of: \.replay_response_bytes)!
    lines.cover(0, template)
    lines.cover(template, template + templateBytes)
    lines.cover(heads, requestCopy)
    lines.cover(requestCopy, requestCopy + copyBytes)
    lines.cover(responseCopy, responseCopy + copyBytes)
    lines.cover(
      core + MemoryLayout<ConnectionCore>.offset(of: \.startUnixNanoseconds)!,
      core + MemoryLayout<ConnectionCore>.offset(of: \.connectStart)!)
    lines.cover(core + ConnectionCore.reusedCopyStart, core + MemoryLayout<ConnectionCore>.size)
    lines.cover(http, http + MemoryLayout<HTTPExchanges>.offset(of: \.requests)!)
    for parser in [\HTTPExchanges.requests, \HTTPExchanges.responses] {
      let start = http + MemoryLayout<HTTPExchanges>.offset(of: parser)!
      let head = start + MemoryLayout<HTTPStreamParser>.offset(of: \.head)!
      lines.cover(start, head + MemoryLayout<HTTPHead>.offset(of: \.text)!)
      let memo = start + MemoryLayout<HTTPStreamParser>.offset(of: \.headMemo)!
      lines.cover(memo, memo + 2 + memoBytes)
    }
    return lines.offsets
  }

  /// Bytes of the request head's text a record's prefetched lines cover: a method, a target with
  /// a query and a `Host` (the varied workload's ~75, an API call's path and parameters).
  static let recordTextBytes = 128

  /// Offsets of the lines an http record on a reused connection writes in its slot: the
  /// exchange's numbers, the connection's identity, the request head's numbers and its text's
  /// first ``recordTextBytes`` (five lines; a short head's record writes the first three,
  /// `RecordLayoutTests`). A line the record writes that no prefetch fetched makes its stores wait
  /// ~0.16 µs, and the next instruction that needs them with them (often nginx's own): nginx with
  /// every request different waited 0.16 µs a request with the text's first line alone covered,
  /// 0.04 with these (BENCHMARKS.md, "Where the cost is, on a server").
  static var recordOffsets: [Int] {
    var lines = LineSet()
    let core = MemoryLayout<RawRecord>.offset(of: \.core)!
    let request = MemoryLayout<RawRecord>.offset(of: \.httpRequest)!
    lines.cover(0, MemoryLayout<RawRecord>.offset(of: \.httpResponseBytes)! + 8)
    lines.cover(core + ConnectionCore.reusedCopyStart, core + MemoryLayout<ConnectionCore>.size)
    lines.cover(request, request + MemoryLayout<HTTPHead>.offset(of: \.text)! + recordTextBytes)
    return lines.offsets
  }

  /// Offsets of the lines an HTTP/2 stream's record writes in its slot: an HTTP/1 record's, and
  /// the stream's id. Prefetched for the next record as soon as one is published
  /// (`cnm_prefetch_next_record`, from ``RawRecord/emit(_:)``), since no hook prefetches for a
  /// record written in the middle of a read. Without them, nginx with every stream different
  /// over TLS h2 spent 0.14 µs a stream waiting in `ch2_stream_release` (the compare-and-swap after
  /// the record waits for its stores); with them, the monitor's time a stream fell from 0.73 to
  /// 0.59 µs (`scripts/bench-profile`).
  static var streamRecordOffsets: [Int] {
    var lines = LineSet()
    for offset in recordOffsets { lines.cover(offset, offset + 64) }
    let stream = MemoryLayout<RawRecord>.offset(of: \.streamID)!
    lines.cover(stream, MemoryLayout<RawRecord>.offset(of: \.targetIsHuffmanCode)! + 1)
    return lines.offsets
  }

  /// Hands the lists to the C hooks: once, before the first connection is tracked.
  static func install() {
    let entry = entryOffsets.map { UInt16(truncatingIfNeeded: $0) }
    let record = recordOffsets.map { UInt16(truncatingIfNeeded: $0) }
    entry.withUnsafeBufferPointer { entry in
      record.withUnsafeBufferPointer { record in
        cnm_set_exchange_lines(entry.baseAddress, UInt32(entry.count), record.baseAddress, UInt32(record.count))
      }
    }
    streamRecordOffsets.map { UInt16(truncatingIfNeeded: $0) }.withUnsafeBufferPointer {
      cnm_set_stream_record_lines($0.baseAddress, UInt32($0.count))
    }
  }

  /// The 64-byte lines some byte ranges fall on. A list kept sorted, not a `Set`: its hashing was
  /// ~0.2 M instructions at every process's first connection (callgrind, curl), for a few dozen lines.
  private struct LineSet {
    /// Their offsets, ascending.
    private(set) var offsets: [Int] = []

    /// The lines of bytes `start..<end`.
    mutating func cover(_ start: Int, _ end: Int) {
      for line in stride(from: start / 64, through: (end - 1) / 64, by: 1) {
        let offset = line * 64
        let index = offsets.firstIndex { $0 >= offset } ?? offsets.count
        if index == offsets.count || offsets[index] != offset { offsets.insert(offset, at: index) }
      }
    }
  }
}
