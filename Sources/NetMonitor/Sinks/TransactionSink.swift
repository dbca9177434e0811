/// Where completed transactions go: the monitor's one extension point, shaped like a swift-log
/// `LogHandler` — one required method, plus built-in `MultiplexSink`, `NoOpSink` and
/// `InMemorySink` for tests.
///
/// The recorder calls `record(_:)` on its own background thread (never inside a hook), one
/// transaction at a time, with the monitor's guard set so the sink's own I/O is not recorded.
/// A sink may still be called from several threads when it is shared (a `MultiplexSink` used
/// elsewhere, a test), so implementations must be thread-safe — hence `Sendable`.
///
/// A sink must not throw or trap for an environmental failure (a full disk, a closed pipe):
/// the monitor never changes the host's behaviour. Count the failure instead, as
/// `JSONLinesSink.writeFailures` does.
public protocol TransactionSink: Sendable {
  /// Takes one completed transaction.
  func record(_ transaction: Transaction)

  /// Pushes out anything the sink buffers. The recorder calls it after every batch of records,
  /// so it must be cheap when there is nothing to do. The default implementation does nothing.
  func flush()
}

extension TransactionSink {
  /// Does nothing: the sink buffers nothing.
  public func flush() {}
}
