import CNetMonitor
import Glibc

/// A record ring file, as its consumer sees it: the file an injected process (or a server started
/// with ``NetMonitor/startRecording(toRingFiles:capacity:)``) writes its records into.
///
/// ``drain(skippingUnfinished:_:)`` takes the records out, freeing their slots for the producer;
/// ``forEachPublishedRecord(_:)`` reads them without taking them (for a report on a file at rest).
public final class RecordRing {
  /// Why a file could not be read as a record ring.
  public enum OpenError: Error, CustomStringConvertible, Equatable {
    case cannotOpen(path: String, errno: Int32)
    /// Not a record ring, one written by a build with another record layout, or one cut short
    /// (copied in part): `reason` says which.
    case notARing(path: String, reason: String)

    public var description: String {
      switch self {
      case .cannotOpen(let path, _), .notARing(let path, _): "\(path): \(reason)"
      }
    }

    /// What is wrong, without the path.
    public var reason: String {
      switch self {
      case .cannotOpen(_, let errno): String(cString: strerror(errno))
      case .notARing(_, let reason): reason
      }
    }

    static let otherVersion = "not a record ring of this elfhook version (wrong magic, version or record layout)"
  }

  public let path: String
  /// The process that wrote the ring, and its short name at the time.
  public let pid: Int32
  public let process: String
  /// When the ring was created, in nanoseconds since the Unix epoch.
  public let createdUnixNs: UInt64

  /// The text of the last record read: the next one often repeats it.
  private var textCache = RecordTextCache()
  private let memory: UnsafeMutableRawPointer
  private let size: Int
  private var queue: OpaquePointer { cnm_ring_queue(memory).unsafelyUnwrapped }

  /// Maps the ring at `path` (read-write: the consumer advances the queue's read position).
  public init(path: String) throws(OpenError) {
    let fd = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW)
    guard fd >= 0 else { throw .cannotOpen(path: path, errno: errno) }
    defer { close(fd) }
    var status = Glibc.stat()
    guard fstat(fd, &status) == 0 else { throw .cannotOpen(path: path, errno: errno) }
    guard (status.st_mode & S_IFMT) == S_IFREG, status.st_size >= 4096 else {
      throw .notARing(path: path, reason: OpenError.otherVersion)
    }
    let size = Int(status.st_size)
    guard let memory = mmap(nil, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0), memory != MAP_FAILED else {
      throw .cannotOpen(path: path, errno: errno)
    }
    guard let header = cnm_ring_header_check(memory, size, RawRecord.layout) else {
      let named = memory.load(fromByteOffset: MemoryLayout<cnm_ring_header>.offset(of: \.file_size)!, as: UInt64.self)
      let magic = memcmp(memory, CNM_RING_MAGIC, 8) == 0
      munmap(memory, size)
      let reason = magic && named > UInt64(size)
        ? "a record ring cut short: \(size) bytes of the \(named) its header names" : OpenError.otherVersion
      throw .notARing(path: path, reason: reason)
    }
    self.path = path
    self.memory = memory
    self.size = size
    pid = header.pointee.pid
    createdUnixNs = header.pointee.created_unix_ns
    process = withUnsafeBytes(of: header.pointee.process) { bytes in
      String(decoding: bytes.prefix { $0 != 0 }, as: UTF8.self)
    }
  }

  deinit { munmap(memory, size) }

  /// Whether a record is ready to be taken (the oldest slot is published): one load of the slot's
  /// sequence number, nothing decoded.
  public var hasPublishedRecord: Bool { cnm_queue_peek(queue) != nil }

  /// Records the ring holds.
  public var capacity: Int { Int(cnm_queue_capacity(queue)) }

  /// Records the producer dropped because the ring was full.
  public var droppedRecords: UInt64 { cnm_queue_dropped(queue) }

  /// Why the producer could not reserve more of the file (an errno: a full disk), after
  /// which the records beyond its usable slots were dropped; `nil` while it could.
  public var reservationError: Int32? {
    let error = cnm_queue_growth_error(queue)
    return error == 0 ? nil : error
  }

  /// Hands every record still in the ring to `body`, oldest first, and leaves them there.
  public func forEachPublishedRecord(_ body: (Transaction) -> Void) {
    let first = cnm_queue_read_position(queue)
    let end = cnm_queue_write_position(queue)
    var position = first
    while position != end {
      if let slot = cnm_queue_published_slot(queue, position) {
        _ = RawRecord.withTransaction(at: slot, process: process, cache: &textCache, body)
      }
      position &+= 1
    }
  }

  /// The queue's read position: how many slots its consumer has released since the ring was
  /// created. An exporter persists it as its cursor (see ``peekPublished(limit:)``).
  public var readPosition: UInt64 { cnm_queue_read_position(queue) }

  /// Up to `limit` slots from the read position on, oldest first, without taking them out: the
  /// slots a consumer that must not lose a record (an exporter waiting for its collector's
  /// acknowledgement) reads before calling ``release(_:)``. Element `i` is the slot at
  /// `readPosition + i`: its record, or `nil` for a slot whose bytes are not a valid record
  /// (`drain` passes such slots over too). Stops at the first slot not yet published.
  public func peekPublished(limit: Int) -> [Transaction?] {
    var slots: [Transaction?] = []
    guard limit > 0 else { return slots }
    peekPublished { slot in
      slots.append(slot)
      return slots.count < limit
    }
    return slots
  }

  /// The same, one slot at a time: `body` gets each slot's record (or `nil`) from the read position
  /// on, until it returns false or a slot is not published yet. A record is decoded only when
  /// `body` is about to get it: a consumer that stops at a budget (an exporter's batch of spans)
  /// decodes no record it will not take.
  public func peekPublished(_ body: (Transaction?) -> Bool) {
    var position = cnm_queue_read_position(queue)
    let end = cnm_queue_write_position(queue)
    while position != end, let slot = cnm_queue_published_slot(queue, position) {
      guard body(RawRecord.transaction(at: slot, process: process, cache: &textCache)) else { return }
      position &+= 1
    }
  }

  /// Frees the `count` oldest slots for the producer, after ``peekPublished(limit:)`` returned at
  /// least that many: their records are gone from the ring. Returns how many were freed (fewer
  /// when fewer slots are published).
  @discardableResult
  public func release(_ count: Int) -> Int {
    var released = 0
    while released < count, cnm_queue_peek(queue) != nil {
      cnm_queue_release(queue)
      released += 1
    }
    return released
  }

  /// Frees the oldest slot when a producer reserved it but never published it — only for a ring
  /// whose producers are all gone (a process killed while writing a record leaves one), so that
  /// a consumer that peeks (``peekPublished(limit:)``) can go on past it. Returns whether a slot
  /// was passed over.
  @discardableResult
  public func skipUnfinished() -> Bool {
    guard cnm_queue_peek(queue) == nil, cnm_queue_has_unpublished(queue) else { return false }
    cnm_queue_skip(queue)
    return true
  }

  /// Takes every published record out of the ring, oldest first, and hands it to `body`.
  ///
  /// A slot reserved but not yet published stops the drain: its producer is still writing it.
  /// With `skippingUnfinished`, such slots are freed and passed over instead — only for a ring
  /// whose producers are all gone (a process killed while writing a record leaves one).
  @discardableResult
  public func drain(skippingUnfinished: Bool = false, _ body: (Transaction) -> Void) -> Int {
    drainSlots(skippingUnfinished: skippingUnfinished) { $0.withTransaction(body) }
  }

  /// Takes every published record out of the ring, oldest first, and hands it to `body` in its
  /// slot, not decoded: `body` reads what it needs (``RecordSlot``) before the slot is freed.
  /// Slots whose bytes are no record are freed and passed over. Returns how many records `body`
  /// was given. `skippingUnfinished` as for ``drain(skippingUnfinished:_:)``.
  @discardableResult
  public func drainSlots(skippingUnfinished: Bool = false, _ body: (RecordSlot) -> Void) -> Int {
    var count = 0
    // The cache is taken out for the drain: one checked access to the property, not one per record.
    var cache = RecordTextCache()
    swap(&cache, &textCache)
    defer { swap(&cache, &textCache) }
    return withUnsafeMutablePointer(to: &cache) { cache in
      var record = RecordSlot(bytes: UnsafeRawPointer(memory), process: process, cache: cache)
      while true {
        if let slot = cnm_queue_peek(queue) {
          // Read in place, then freed: the producer cannot reuse the slot before the release.
          if RawRecord.isRecord(at: slot) {
            record.bytes = UnsafeRawPointer(slot)
            body(record)
            count += 1
          }
          cnm_queue_release(queue)
        } else if skippingUnfinished && cnm_queue_has_unpublished(queue) {
          cnm_queue_skip(queue)
        } else {
          return count
        }
      }
    }
  }
}
