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
/// `read` and their families in every loaded image, and in every image loaded later. The hooks
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

    public var description: String {
      switch self {
      case .outOfMemory: "NetMonitor: cannot map the connection table or the record queue"
      case .threadCreationFailed: "NetMonitor: cannot create the recorder thread"
      case .rebinding(let error): "NetMonitor: cannot install the hooks: \(error)"
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
      guard let queue = cnm_queue_create(queueCapacity, MemoryLayout<RawRecord>.stride) else { throw .outOfMemory }
      cnm_set_record_queue(queue)
    }
    guard Recorder.start(sink: sink, process: processName()) else { throw .threadCreationFailed }
    try installHooks()
  }

  /// Hands every completed record to the sink now (the recorder thread does so every few
  /// milliseconds). Call it before reading an ``InMemorySink`` in a test, or before exiting.
  public static func flush() {
    Recorder.drain()
  }

  /// Records dropped because the queue was full.
  public static var droppedRecords: UInt64 { Recorder.dropped }

  private static let installed = HookInstallation()

  private static func installHooks() throws(StartError) {
    do {
      try installed.installOnce()
    } catch {
      throw .rebinding(error)
    }
  }

  /// `/proc/self/comm`: the short name records carry.
  private static func processName() -> String {
    let fd = open("/proc/self/comm", O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { return "" }
    defer { close(fd) }
    var buffer = [UInt8](repeating: 0, count: 64)
    let count = read(fd, &buffer, buffer.count)
    guard count > 0 else { return "" }
    var text = String(decoding: buffer[0..<count], as: UTF8.self)
    while text.last == "\n" { text.removeLast() }
    return text
  }
}
