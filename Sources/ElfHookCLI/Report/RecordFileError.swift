import NetMonitor

/// Why a record file could not be read; `description` is the one line `elfhook` prints.
enum RecordFileError: Error, Equatable, CustomStringConvertible {
  /// The file could not be opened or read: `reason` is the `strerror` text.
  case unreadable(path: String, reason: String)
  /// A line is not a record; `line` counts from 1.
  case badRecord(path: String, line: Int, reason: RecordDecodingError)

  var description: String {
    switch self {
    case .unreadable(let path, let reason): "cannot read \(path): \(reason)"
    case .badRecord(let path, let line, let reason): "\(path):\(line): not a record: \(reason)"
    }
  }
}
