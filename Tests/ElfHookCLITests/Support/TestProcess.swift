import Foundation

/// A program run to its end, or started and stopped by the test; every wait is bounded.
final class TestProcess {
  let process = Process()
  private let stdoutFile: URL
  private let stderrFile: URL

  /// Starts `arguments` (the first is the program) with `environment` added to this process's.
  init(_ arguments: [String], environment: [String: String] = [:]) throws {
    let scratch = FileManager.default.temporaryDirectory
    stdoutFile = scratch.appendingPathComponent("test-process-\(UUID().uuidString).out")
    stderrFile = scratch.appendingPathComponent("test-process-\(UUID().uuidString).err")
    _ = FileManager.default.createFile(atPath: stdoutFile.path, contents: nil)
    _ = FileManager.default.createFile(atPath: stderrFile.path, contents: nil)
    process.executableURL = URL(fileURLWithPath: arguments[0])
    process.arguments = Array(arguments.dropFirst())
    process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
    process.standardInput = FileHandle.nullDevice
    process.standardOutput = try FileHandle(forWritingTo: stdoutFile)
    process.standardError = try FileHandle(forWritingTo: stderrFile)
    try process.run()
  }

  deinit {
    if process.isRunning { kill(process.processIdentifier, SIGKILL) }
    try? FileManager.default.removeItem(at: stdoutFile)
    try? FileManager.default.removeItem(at: stderrFile)
  }

  /// Runs `arguments` to the end (killed after `timeout` seconds).
  static func run(_ arguments: [String], environment: [String: String] = [:], timeout: Double = 60) throws
    -> TestProcess
  {
    let process = try TestProcess(arguments, environment: environment)
    process.wait(timeout: timeout)
    return process
  }

  /// Waits for the process to end, for at most `timeout` seconds, then kills it with SIGKILL.
  func wait(timeout: Double) {
    let deadline = Date().addingTimeInterval(timeout)
    while process.isRunning && Date() < deadline { usleep(20_000) }
    if process.isRunning { kill(process.processIdentifier, SIGKILL) }
    process.waitUntilExit()
  }

  /// Sends `signal` to the process.
  func signal(_ signal: Int32) { kill(process.processIdentifier, signal) }

  var status: Int32 { process.terminationStatus }
  var stdout: String { (try? String(contentsOf: stdoutFile, encoding: .utf8)) ?? "" }
  var stderr: String { (try? String(contentsOf: stderrFile, encoding: .utf8)) ?? "" }
}
