import Synchronization

/// Keeps every transaction in memory, for tests and for embedding (a server's own status page):
/// the equivalent of swift-log's in-memory handler.
///
/// Thread-safe: `record(_:)` and the accessors may run on any threads at once. Each accessor
/// returns a snapshot.
public final class InMemorySink: TransactionSink {
  private let storage = Mutex<[Transaction]>([])

  /// Creates an empty sink.
  public init() {}

  /// Appends `transaction`.
  public func record(_ transaction: Transaction) {
    storage.withLock { $0.append(transaction) }
  }

  /// Every transaction so far, in the order they were recorded.
  public var transactions: [Transaction] {
    storage.withLock { $0 }
  }

  /// The number of transactions so far.
  public var count: Int {
    storage.withLock { $0.count }
  }

  /// The DNS records so far, in order.
  public var dns: [DNSRecord] {
    storage.withLock { list in
      list.compactMap { if case .dns(let record) = $0 { record } else { nil } }
    }
  }

  /// The connection records so far, in order.
  public var connections: [ConnectionRecord] {
    storage.withLock { list in
      list.compactMap { if case .connection(let record) = $0 { record } else { nil } }
    }
  }

  /// The HTTP records so far, in order.
  public var http: [HTTPRecord] {
    storage.withLock { list in
      list.compactMap { if case .http(let record) = $0 { record } else { nil } }
    }
  }

  /// Forgets every transaction.
  public func removeAll() {
    storage.withLock { $0.removeAll() }
  }
}
