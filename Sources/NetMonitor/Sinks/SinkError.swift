/// A system call of a sink failed: which call, on which path, and `errno`.
///
/// `description` reads like `open("/var/log/x.jsonl"): Permission denied (EACCES)`.
public struct SinkError: Error, Hashable, CustomStringConvertible {
  /// The failing C function (`open`, `write`…).
  public var call: String
  /// The file the call was about, when there is one.
  public var path: String?
  /// The `errno` the call left.
  public var errno: Int32

  /// Creates an error from its parts.
  public init(call: String, path: String? = nil, errno: Int32) {
    self.call = call
    self.path = path
    self.errno = errno
  }

  /// The symbolic name of `errno` (`EACCES`).
  public var code: String { errnoName(errno) }

  /// The `strerror` text of `errno`.
  public var message: String { errnoMessage(errno) }

  public var description: String {
    let subject = path.map { call + "(\"" + $0 + "\")" } ?? call
    return subject + ": " + message + " (" + code + ")"
  }
}
