/// One `getaddrinfo` call: which name was resolved, to which addresses, how long it took.
///
/// JSON keys, in this order: `kind` (`"dns"`), `pid`, `process`, `start_unix_ns`, `duration_ms`,
/// `host`, `addresses`, `error`.
public struct DNSRecord: Sendable, Hashable {
  /// The id of the calling process (`pid`).
  public var pid: Int32
  /// The short name of the calling process, as in `/proc/self/comm` (`process`).
  public var process: String
  /// When the call started, in nanoseconds since the Unix epoch (`start_unix_ns`).
  public var startUnixNs: UInt64
  /// How long the call took, in milliseconds (`duration_ms`).
  public var durationMs: Double
  /// The name that was looked up: `getaddrinfo`'s `node` argument (`host`).
  public var host: String
  /// The addresses returned, in the order `getaddrinfo` returned them, without duplicates; empty
  /// when the call failed (`addresses`).
  public var addresses: [String]
  /// Why the call failed, or `nil` when it succeeded (`error`; `EAI_*` codes).
  public var error: RecordedError?

  /// Creates a record of one `getaddrinfo` call.
  public init(
    pid: Int32, process: String, startUnixNs: UInt64, durationMs: Double,
    host: String, addresses: [String], error: RecordedError? = nil
  ) {
    self.pid = pid
    self.process = process
    self.startUnixNs = startUnixNs
    self.durationMs = durationMs
    self.host = host
    self.addresses = addresses
    self.error = error
  }
}
