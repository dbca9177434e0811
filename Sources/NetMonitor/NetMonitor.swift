import CNetMonitor
import ElfHook
import Glibc

/// Zero-code network monitoring for this process: one call at start-up, and every DNS lookup,
/// connection and HTTP/1.x exchange the process makes or serves becomes a ``Transaction`` handed
/// to a ``TransactionSink``.
///
/// ```swift
/// import NetMonitor
/// try NetMonitor.start(sink: try JSONLinesSink(path: "/var/log/app/network.jsonl"))
/// ```
///
/// It rebinds `connect`, `getaddrinfo`, `SSL_do_handshake` (and `SSL_connect`, `SSL_accept`),
/// GnuTLS's `gnutls_handshake` and record calls, `read` and their families in every loaded image,
/// and in every image loaded later; an OpenSSL or BoringSSL linked into the executable gets inline
/// hooks on the same functions (`LinkedOpenSSL`). The hooks
/// call the originals through the pointers the engine saved and keep `errno` as the originals left
/// it; for a descriptor that is not a tracked connection they add a bounds check and a byte load.
public enum NetMonitor {
  /// Why the monitor could not start. The process keeps running unmonitored.
  public enum StartError: Error, CustomStringConvertible {
    /// The connection table or the record queue could not be mapped.
    case outOfMemory
    /// The recorder thread could not be created.
    case threadCreationFailed
    /// The engine refused to rebind.
    case rebinding(ElfHookError)
    /// The record ring file could not be created (`errno`, and the path tried).
    case recordFile(path: String, errno: Int32)
    /// The monitor already records to another destination (a sink, or ring files).
    case alreadyStarted

    public var description: String { "NetMonitor: " + reason }

    /// What failed, without the module's name (the injected library's line names elfhook).
    public var reason: String {
      switch self {
      case .outOfMemory: "cannot map the connection table or the record queue"
      case .threadCreationFailed: "cannot create the recorder thread"
      case .rebinding(let error): "cannot install the hooks: \(error)"
      case .recordFile(let path, let errno): "cannot create the record file \(path): \(String(cString: strerror(errno)))"
      case .alreadyStarted: "already started with another destination"
      }
    }
  }

  /// Starts monitoring; calling it again only replaces the sink.
  ///
  /// - Parameters:
  ///   - sink: where the records go (``JSONLinesSink``, ``InMemorySink``, ``MultiplexSink``…).
  ///   - queueCapacity: records that can wait for the recorder thread (a power of two); when the
  ///     queue is full the hooks drop records and count them (``droppedRecords``), never block.
  public static func start(sink: any TransactionSink, queueCapacity: Int = 4096) throws(StartError) {
    guard ConnectionTable.setUp() else { throw .outOfMemory }
    if cnm_record_queue() == nil {
      guard let queue = cnm_queue_create(queueCapacity, RawRecord.slotSize) else { throw .outOfMemory }
      cnm_fork_handling_set_up(nil, 0, 0, 0)
      cnm_set_record_queue(queue)
    } else if ringPath != nil {
      throw .alreadyStarted
    }
    guard Recorder.start(sink: sink, process: processName()) else { throw .threadCreationFailed }
    try installHooks()
  }

  /// Starts monitoring with no thread of its own: the hooks write each completed record into a
  /// record ring file (``RecordRing``), a shared file mapping, where it survives the process being
  /// killed the instant after. Another process drains it (`elfhook run` does, and `elfhook report`
  /// reads it). A child made with `fork` gets a ring of its own from the same pattern.
  ///
  /// - Parameters:
  ///   - pattern: the file to create; `%p` becomes the pid. An existing file is never opened:
  ///     `.1`, `.2`… is appended instead. Created with mode 0600.
  ///   - capacity: records the ring holds until a consumer takes them (a power of two); when it
  ///     is full the hooks drop records and count them in the ring, never block.
  /// - Returns: the path of the ring created.
  @discardableResult
  public static func startRecording(toRingFiles pattern: String, capacity: Int = 4096) throws(StartError)
    -> String
  {
    try startRecording(toRingFiles: pattern, capacity: capacity, adopting: nil)
  }

  /// Starts the monitor of a process injected with libElfHookPreload.so, from what that library
  /// hands over (`cnm_handoff`): the ring it created for what it recorded before the monitor was
  /// loaded (lookups, and the client connections it recorded itself), or none; its name
  /// resolutions; and the client connections it still tracks, which the monitor takes over before
  /// its hooks are installed. Returns the path of the ring.
  @_spi(Injection)
  public static func startInjected(_ handoff: UnsafePointer<cnm_handoff>) throws(StartError) -> String {
    let given = handoff.pointee
    let ring = given.ring.map { ring in (queue: ring, path: String(cString: given.ring_path)) }
    if let resolutions = given.resolutions { cnm_resolutions_adopt(resolutions, given.resolutions_next_ticket) }
    return try startRecording(toRingFiles: String(cString: given.pattern), capacity: given.capacity, adopting: ring) {
      Traffic.adoptClients(of: handoff)
      if let call = given.call {
        HookInstallation.setTrafficCallbacks()
        takeInjectedCall(call)
      }
    }
  }

  /// A client connection the injected library made while the monitor took its others over.
  @_spi(Injection)
  public static func takeInjectedClient(head: UnsafePointer<cnm_connection_head>, core: UnsafeRawPointer) {
    Traffic.adoptClient(head: head, core: core)
  }

  /// A call on a connection the injected library tracked, whose bytes it handed over: counted and
  /// read as the hooks' would be (a TLS library's plaintext as the TLS hooks'), timed as of when
  /// the call moved them, not when they arrive here (the library may have loaded the monitor, or
  /// waited for another thread to, meanwhile).
  @_spi(Injection)
  public static func takeInjectedCall(_ call: UnsafePointer<cnm_handed_call>) {
    let given = call.pointee
    cnm_set_handed_call_time(given.moved_at)
    defer { cnm_set_handed_call_time(0) }
    if given.plaintext {
      guard given.result > 0, let slot = ConnectionTable.tracked(given.fd) else { return }
      TLSSession.plaintext(slot, given.buffer, given.result, fromPeer: given.received)
    } else {
      cnm_account_tracked_call(given.fd, given.received, given.buffer, given.vector, given.vector_count, given.result)
    }
  }

  private static func startRecording(
    toRingFiles pattern: String, capacity: Int, adopting existing: (queue: OpaquePointer, path: String)?,
    beforeHooking takeOver: () -> Void = {}
  ) throws(StartError) -> String {
    guard ConnectionTable.setUp() else { throw .outOfMemory }
    if let ringPath { return ringPath }
    guard cnm_record_queue() == nil else { throw .alreadyStarted }
    let ring: (queue: OpaquePointer, path: String)
    if let existing {
      ring = existing
    } else {
      var path = [CChar](repeating: 0, count: Int(PATH_MAX))
      guard
        let created = cnm_ring_create(
          pattern, capacity, RawRecord.slotSize, RawRecord.layout, Int(CNM_RING_FIRST_RECORDS), &path, path.count)
      else {
        throw .recordFile(path: path[0] == 0 ? pattern : Self.string(path), errno: errno)
      }
      ring = (created, Self.string(path))
    }
    cnm_fork_handling_set_up(pattern, capacity, RawRecord.slotSize, RawRecord.layout)
    cnm_set_record_queue(ring.queue)
    ringPath = ring.path
    takeOver()
    try installHooks()
    return ring.path
  }

  /// The ring file created by ``startRecording(toRingFiles:capacity:)`` (set once, at start-up).
  nonisolated(unsafe) private static var ringPath: String?

  /// Hands every completed record to the sink now (the recorder thread does so every few
  /// milliseconds). Call it before reading an ``InMemorySink`` in a test, or before exiting.
  public static func flush() {
    Recorder.drain()
  }

  /// Records dropped because the queue (or ring) was full.
  public static var droppedRecords: UInt64 { Recorder.dropped }

  private static let installed = HookInstallation()

  private static func installHooks() throws(StartError) {
    do {
      try installed.installOnce()
    } catch {
      throw .rebinding(error)
    }
  }

  private static func string(_ nulTerminated: [CChar]) -> String {
    String(decoding: nulTerminated.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
  }

  /// `/proc/self/comm`: the short name records carry.
  public static func processName() -> String {
    var name = [CChar](repeating: 0, count: 32)
    cnm_process_name(&name, name.count)
    return string(name)
  }
}
