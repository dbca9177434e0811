/// One completed network transaction: the unit the recorder assembles and every sink receives.
///
/// Each case is one kind of record of the record stream (JSON Lines, one object per line; see
/// `ARCHITECTURE.md`, "The record"). `jsonLine()` writes the line, `init(jsonLine:)` reads it back.
public enum Transaction: Sendable, Hashable {
  /// One `getaddrinfo` call (`"kind": "dns"`).
  case dns(DNSRecord)
  /// One socket connection from open to close (`"kind": "connection"`).
  case connection(ConnectionRecord)
  /// One HTTP/1.x request/response exchange (`"kind": "http"`).
  case http(HTTPRecord)

  /// The record's kind, as the `kind` field spells it.
  public var kind: TransactionKind {
    switch self {
    case .dns: .dns
    case .connection: .connection
    case .http: .http
    }
  }

  /// The id of the process that made the call (`pid`).
  public var pid: Int32 {
    switch self {
    case .dns(let record): record.pid
    case .connection(let record): record.pid
    case .http(let record): record.pid
    }
  }

  /// The short name of the process (`process`).
  public var process: String {
    switch self {
    case .dns(let record): record.process
    case .connection(let record): record.process
    case .http(let record): record.process
    }
  }

  /// When the transaction started, in nanoseconds since the Unix epoch (`start_unix_ns`).
  public var startUnixNs: UInt64 {
    switch self {
    case .dns(let record): record.startUnixNs
    case .connection(let record): record.startUnixNs
    case .http(let record): record.startUnixNs
    }
  }

  /// How long the transaction took, in milliseconds (`duration_ms`).
  public var durationMs: Double {
    switch self {
    case .dns(let record): record.durationMs
    case .connection(let record): record.durationMs
    case .http(let record): record.durationMs
    }
  }
}

/// The `kind` field of a record.
public enum TransactionKind: String, Sendable, Hashable, CaseIterable {
  /// A `getaddrinfo` call: `DNSRecord`.
  case dns
  /// A socket connection: `ConnectionRecord`.
  case connection
  /// An HTTP/1.x exchange: `HTTPRecord`.
  case http
}
