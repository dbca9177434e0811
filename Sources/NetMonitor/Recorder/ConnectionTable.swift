@preconcurrency import CNetMonitor

/// One entry of the connection table. `head` must stay first: the C data-path hooks find it at
/// the entry's address (checked in ``ConnectionTable/setUp()``).
struct ConnectionSlot {
  var head = cnm_connection_head()
  var core = ConnectionCore()
  var http = HTTPExchanges()
  /// How each direction is read (HTTP/1.x or HTTP/2), and the HTTP/2 state when there is one.
  var h2 = H2Link()
  /// A direction whose first read was a TLS record header alone (GnuTLS reads the 5 bytes
  /// first): still watched for the hello that follows (`Traffic.noteTLSOnTheWire`). 0: none;
  /// 1: sent; 2: received.
  var helloAfterHeader: UInt8 = 0
}

/// The fd-indexed connection table (C globals `cnm_tracked`, `cnm_states`): set up once, then
/// read by every hook. A descriptor that is not a tracked connection costs a bounds check and one
/// byte load.
enum ConnectionTable {
  /// Maps the table. Returns false when the memory cannot be mapped.
  static func setUp() -> Bool {
    precondition(MemoryLayout<ConnectionSlot>.offset(of: \.head) == 0, "the C hooks read the head at offset 0")
    guard cnm_table_set_up(entryBytes) else { return false }
    // Without the pool (an address-space limit), HTTP/2 connections are counted, not read: their
    // records say so (`H2Traffic.poolExhausted`).
    _ = cnm_h2_pool_set_up(MemoryLayout<H2Connection>.size)
    ExchangeLines.install()
    installReplayFields()
    return true
  }

  /// Tells the hooks' replay where a record's times are (`cnm_set_replay_fields`): in its first
  /// line, which the replay copies from its template and then writes them into.
  private static func installReplayFields() {
    let start = MemoryLayout<RawRecord>.offset(of: \.startUnixNanoseconds)!
    let duration = MemoryLayout<RawRecord>.offset(of: \.durationNanoseconds)!
    let firstByte = MemoryLayout<RawRecord>.offset(of: \.httpFirstByteNanoseconds)!
    precondition([start, duration, firstByte].allSatisfy { $0 + 8 <= 64 }, "the replay writes times in line 0")
    cnm_set_replay_fields(UInt16(start), UInt16(duration), UInt16(firstByte))
  }

  /// An entry's size: whole cache lines, so that each entry's fields fall on the same lines as
  /// every other's (the table itself is page-aligned).
  static var entryBytes: Int { (MemoryLayout<ConnectionSlot>.stride + 63) & ~63 }

  /// The slot of `fd` when it is a tracked connection. The hot path of every hook.
  /// Reads the C globals directly (`@preconcurrency import`): a call to the C inline accessor
  /// would not be inlined into Swift and would double the cost of every hook.
  @inline(__always)
  static func tracked(_ fd: Int32) -> UnsafeMutablePointer<ConnectionSlot>? {
    guard UInt32(bitPattern: fd) < cnm_capacity, cnm_tracked.unsafelyUnwrapped[Int(fd)] != 0 else { return nil }
    return UnsafeMutableRawPointer(cnm_states.unsafelyUnwrapped + Int(fd) &* cnm_slot_size)
      .assumingMemoryBound(to: ConnectionSlot.self)
  }

  /// Starts tracking `fd` with a fresh entry; nil when `fd` is past the table.
  static func track(_ fd: Int32) -> UnsafeMutablePointer<ConnectionSlot>? {
    guard let raw = cnm_slot(fd) else { return nil }
    let slot = raw.assumingMemoryBound(to: ConnectionSlot.self)
    slot.pointee = ConnectionSlot()
    slot.pointee.head.watch_sent = 1
    slot.pointee.head.watch_received = 1
    cnm_set_tracked(fd, true)
    return slot
  }

  /// Stops tracking `fd` (at close, or when a connect failed).
  static func untrack(_ fd: Int32) {
    cnm_set_tracked(fd, false)
  }
}
