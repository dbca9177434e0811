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
    H2Streams.install()
    cnm_set_h2_reading(MemoryLayout<ConnectionSlot>.offset(of: \.h2.connection)!, H2Traffic.stoppedCallback)
    ExchangeLines.install()
    installReplayFields()
    return true
  }

  /// Tells the hooks' replay where it writes a record's fields (`cnm_replay_fields_set_up`, from
  /// C's copy of the record layout, which `RecordLayoutTests` compares with Swift's): the times and
  /// the exchange's numbers, the connection's part it copies from its template, and the request
  /// head, with the scalars every simple request's head has (``ExchangeReplay``).
  private static func installReplayFields() {
    cnm_replay_fields_set_up()
    let fields = cnm_replay_fields_in_use()
    precondition(
      64 + Int(fields.request_head - fields.setup) + Int(fields.scalars_length) + Int(CNM_REPLAY_TEXT_CAPACITY)
        <= MemoryLayout.size(ofValue: cnm_replay_template().record),
      "the replay's template holds a record's first line, a new connection and a request head")
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
