import NetMonitor

/// The failures of one kind across DNS and connection records: the same hooked call failing with
/// the same code (`connect` `ECONNREFUSED`, `getaddrinfo` `EAI_NONAME`…).
struct FailureGroup {
  /// What identifies a group.
  struct Key: Hashable {
    var call: String
    var code: String
  }

  var key: Key
  /// The message of the first failure (messages of one code differ only in detail).
  var message: String
  /// Where the first failure happened (a name, or `address:port`), so a reader knows where to look.
  var firstTarget: String
  var count = 0

  init(_ error: RecordedError, target: String) {
    key = Key(call: error.call, code: error.code)
    message = error.message
    firstTarget = target
  }
}
