/// A sink that drops every transaction: monitoring switched off without removing the hooks
/// (`ELFHOOK_DISABLE=1`), or a placeholder in tests.
public struct NoOpSink: TransactionSink {
  /// Creates a sink that drops everything.
  public init() {}

  /// Drops `transaction`.
  public func record(_ transaction: Transaction) {}
}
