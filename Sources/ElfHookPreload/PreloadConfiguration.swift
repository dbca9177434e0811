import Glibc

/// What the ELFHOOK_* variables of an injected process ask for (ARCHITECTURE.md, "Environment of an
/// injected process"). Every problem is one ``ConfigurationError``: the process then runs
/// unmonitored, with one line on stderr saying why.
struct PreloadConfiguration: Equatable {
  enum LogLevel: String, CaseIterable {
    case off, error, info
  }

  /// `ELFHOOK_OUTPUT`: where the record ring goes; `%p` becomes the pid.
  var output: String
  /// `ELFHOOK_LOG`: `error` (the default) prints problems only, `info` also the file recorded to,
  /// `off` nothing at all.
  var log: LogLevel
  /// `ELFHOOK_BUFFER_RECORDS`: records the ring holds until `elfhook` takes them.
  var capacity: Int

  /// 1024 records (about 1.6 MB): the ring's blocks are reserved at start, and a larger default
  /// cost every process a millisecond more there (BENCHMARKS.md, process start).
  static let defaultCapacity = 1024
  static let capacityRange = 64...(1 << 20)

  /// The configuration of this process, nil when `ELFHOOK_DISABLE=1` asks for none.
  static func fromEnvironment(_ lookUp: (String) -> String? = environmentValue) throws(ConfigurationError)
    -> PreloadConfiguration?
  {
    let log = try logLevel(lookUp("ELFHOOK_LOG"))
    switch lookUp("ELFHOOK_DISABLE") {
    case nil, "", "0": break
    case "1": return nil
    case let other?: throw ConfigurationError(log: log, problem: "ELFHOOK_DISABLE must be 1 or 0, not '\(other)'")
    }
    guard let output = lookUp("ELFHOOK_OUTPUT"), !output.isEmpty else {
      throw ConfigurationError(
        log: log,
        problem: "ELFHOOK_OUTPUT is not set (run the command with `elfhook run`, or set it to a file such as /tmp/records/%p.ring)")
    }
    return PreloadConfiguration(output: output, log: log, capacity: try capacity(lookUp("ELFHOOK_BUFFER_RECORDS"), log: log))
  }

  private static func logLevel(_ value: String?) throws(ConfigurationError) -> LogLevel {
    guard let value, !value.isEmpty else { return .error }
    guard let level = LogLevel(rawValue: value) else {
      let names = LogLevel.allCases.map(\.rawValue).joined(separator: ", ")
      throw ConfigurationError(log: .error, problem: "ELFHOOK_LOG must be one of \(names), not '\(value)'")
    }
    return level
  }

  private static func capacity(_ value: String?, log: LogLevel) throws(ConfigurationError) -> Int {
    guard let value, !value.isEmpty else { return defaultCapacity }
    guard let count = Int(value), capacityRange.contains(count), count & (count - 1) == 0 else {
      throw ConfigurationError(
        log: log,
        problem: "ELFHOOK_BUFFER_RECORDS must be a power of two from \(capacityRange.lowerBound) to \(capacityRange.upperBound), not '\(value)'")
    }
    return count
  }

  private static func environmentValue(_ name: String) -> String? {
    getenv(name).map { String(decoding: UnsafeRawBufferPointer(start: $0, count: strlen($0)), as: UTF8.self) }
  }
}

/// A variable the injected library cannot work with.
struct ConfigurationError: Error, Equatable {
  /// The log level in force when the problem was found (an invalid ELFHOOK_LOG is reported at `error`).
  var log: PreloadConfiguration.LogLevel
  var problem: String
}
