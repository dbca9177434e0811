/// Hands every transaction to several sinks, in order: a record file and a live view, or a file
/// and an `InMemorySink` in a test.
public struct MultiplexSink: TransactionSink {
  /// The sinks, in the order they receive each transaction.
  public let sinks: [any TransactionSink]

  /// Creates a sink that forwards to each of `sinks`, in order.
  public init(_ sinks: [any TransactionSink]) {
    self.sinks = sinks
  }

  /// Forwards `transaction` to every sink.
  public func record(_ transaction: Transaction) {
    for sink in sinks { sink.record(transaction) }
  }

  /// Flushes every sink.
  public func flush() {
    for sink in sinks { sink.flush() }
  }
}
