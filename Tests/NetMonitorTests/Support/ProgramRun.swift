import Foundation

/// Runs a program to completion and keeps what it wrote: for the tests that drive `elfhook run`
/// and injected processes from outside.
struct ProgramRun {
  var status: Int32
  var terminatedBySignal: Bool
  var stdout: Data
  var stderr: String

  /// Runs `arguments` (argv[0] looked up in PATH via /usr/bin/env unless it has a slash) with
  /// `environment` (nil: ours), output captured through files so that no pipe can fill up.
  static func run(_ arguments: [String], environment: [String: String]? = nil, workingDirectory: URL? = nil,
                  timeout: TimeInterval = 60) throws -> ProgramRun {
    let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("program-run-" + UUID().uuidString)
    try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: scratch) }
    let out = scratch.appendingPathComponent("stdout")
    let err = scratch.appendingPathComponent("stderr")
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

  struct Failure: Error, CustomStringConvertible {
    var message: String
    var description: String { message }
  }
}

/// The built `elfhook` and `libElfHookPreload.so`: beside the running test bundle (the same
/// build directory), else in `<package>/.build/debug`.
enum BuiltProducts {
  static var directory: URL? {
    var candidates: [URL] = []
    if let exe = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") {
      candidates.append(URL(fileURLWithPath: exe).deletingLastPathComponent())
    }
    candidates.append(
      URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent(".build/debug"))
    return candidates.first {
      FileManager.default.isExecutableFile(atPath: $0.appendingPathComponent("elfhook").path)
        && FileManager.default.fileExists(atPath: $0.appendingPathComponent("libElfHookPreload.so").path)
    }
  }

  static var elfhook: String? { directory?.appendingPathComponent("elfhook").path }
  static var preloadLibrary: String? { directory?.appendingPathComponent("libElfHookPreload.so").path }
  static let missingMessage = "elfhook and libElfHookPreload.so were not found: run `swift build` first"
}
