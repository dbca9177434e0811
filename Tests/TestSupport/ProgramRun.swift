import Foundation

/// A program run to completion, with what it wrote: for the tests that drive `elfhook`, compiled
/// fixtures and injected processes from outside.
public struct ProgramRun: Sendable {
  public var status: Int32
  public var terminatedBySignal: Bool
  public var stdout: Data
  public var stderr: String

  /// Runs `arguments` (argv[0] looked up in PATH via /usr/bin/env unless it has a slash) with
  /// `environment` (nil: ours), output captured through files so that no pipe can fill up.
  ///
  /// - Throws: `ProgramRun.Failure` when it has not finished after `timeout` seconds (it is
  ///   killed), or what starting it threw.
  public static func run(
    _ arguments: [String], environment: [String: String]? = nil, workingDirectory: URL? = nil,
    timeout: TimeInterval = 60
  ) throws -> ProgramRun {
    let scratch = try TemporaryDirectory("program-run", inSharedMemory: false)
    defer { scratch.remove() }
    let out = scratch.url.appendingPathComponent("stdout")
    let err = scratch.url.appendingPathComponent("stderr")
    _ = FileManager.default.createFile(atPath: out.path, contents: nil)
    _ = FileManager.default.createFile(atPath: err.path, contents: nil)
    let process = Process()
    if arguments[0].contains("/") {
      process.executableURL = URL(fileURLWithPath: arguments[0])
      process.arguments = Array(arguments.dropFirst())
    } else {
      process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
      process.arguments = arguments
    }
    if let environment { process.environment = environment }
    if let workingDirectory { process.currentDirectoryURL = workingDirectory }
    process.standardInput = FileHandle.nullDevice
    process.standardOutput = try FileHandle(forWritingTo: out)
    process.standardError = try FileHandle(forWritingTo: err)
    try process.run()
    let deadline = Date().addingTimeInterval(timeout)
    while process.isRunning && Date() < deadline { usleep(10_000) }
    if process.isRunning {
      kill(process.processIdentifier, SIGKILL)
      process.waitUntilExit()
      throw Failure(message: "\(arguments.joined(separator: " ")) did not finish in \(Int(timeout)) s")
    }
    return ProgramRun(
      status: process.terminationStatus, terminatedBySignal: process.terminationReason == .uncaughtSignal,
      stdout: try Data(contentsOf: out), stderr: String(decoding: try Data(contentsOf: err), as: UTF8.self))
  }

  /// What the program wrote to stdout, as text.
  public var stdoutText: String { String(decoding: stdout, as: UTF8.self) }

  public struct Failure: Error, CustomStringConvertible {
    public var message: String
    public var description: String { message }
  }
}
