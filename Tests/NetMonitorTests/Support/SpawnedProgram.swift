import Foundation
import Glibc

/// A program left running while a test talks to it (a server): its stdout is read line by line with
/// a deadline, its stdin stays open until `closeInput()`, and it is killed if still running when the
/// value goes away.
final class SpawnedProgram {
  let process = Process()
  private let input = Pipe()
  private let output = Pipe()
  private var pending = Data()

  /// Starts `arguments[0]` (a path) with `arguments[1...]`; `environment` is added to ours.
  init(_ arguments: [String], environment: [String: String] = [:], stderr: URL? = nil) throws {
    process.executableURL = URL(fileURLWithPath: arguments[0])
    process.arguments = Array(arguments.dropFirst())
    process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
    process.standardInput = input
    process.standardOutput = output
    if let stderr {
      _ = FileManager.default.createFile(atPath: stderr.path, contents: nil)
      process.standardError = try FileHandle(forWritingTo: stderr)
    } else {
      process.standardError = FileHandle.nullDevice
    }
    try process.run()
  }

  deinit {
    if process.isRunning {
      kill(process.processIdentifier, SIGKILL)
      process.waitUntilExit()
    }
  }

  /// The next line of stdout (without the newline), or nil at end of file or after `timeout`.
  func readLine(timeout: TimeInterval) -> String? {
    let deadline = Date().addingTimeInterval(timeout)
    let fd = output.fileHandleForReading.fileDescriptor
    while true {
      if let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
        let line = String(decoding: pending[pending.startIndex..<newline], as: UTF8.self)
        pending = Data(pending[(newline + 1)...])
        return line
      }
      let remaining = deadline.timeIntervalSinceNow
      guard remaining > 0 else { return nil }
      var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
      guard poll(&poller, 1, Int32(min(remaining, 1) * 1000)) >= 0 || errno == EINTR else { return nil }
      guard poller.revents != 0 else { continue }
      var chunk = [UInt8](repeating: 0, count: 4096)
      let count = read(fd, &chunk, chunk.count)
      if count == 0 { return nil }
      if count > 0 { pending.append(contentsOf: chunk[0..<count]) }
    }
  }

  /// The port of the first line reading `PORT <n>`, or nil if none came in `timeout`.
  func port(timeout: TimeInterval) -> UInt16? {
    let deadline = Date().addingTimeInterval(timeout)
    while let line = readLine(timeout: max(deadline.timeIntervalSinceNow, 0)) {
      if line.hasPrefix("PORT "), let port = UInt16(line.dropFirst(5)) { return port }
    }
    return nil
  }

  /// Closes the program's stdin (the loopback servers exit when it closes).
  func closeInput() {
    try? input.fileHandleForWriting.close()
  }

  /// Sends `signal`, then waits up to `timeout` for the program to exit; its status, or nil if it
  /// is still running.
  func stop(with signal: Int32 = SIGTERM, timeout: TimeInterval) -> (status: Int32, bySignal: Bool)? {
    kill(process.processIdentifier, signal)
    let deadline = Date().addingTimeInterval(timeout)
    while process.isRunning && Date() < deadline { usleep(10_000) }
    if process.isRunning { return nil }
    return (process.terminationStatus, process.terminationReason == .uncaughtSignal)
  }
}
