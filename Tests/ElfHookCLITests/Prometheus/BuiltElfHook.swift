import Foundation

/// The `elfhook` this test bundle was built with: beside the bundle (the same build directory),
/// else in `<package>/.build/debug`; `nil` when neither has it (with `libElfHookPreload.so`).
enum BuiltElfHook {
  static let path: String? = {
    var directories: [URL] = []
    if let bundle = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") {
      directories.append(URL(fileURLWithPath: bundle).deletingLastPathComponent())
    }
    let package = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
      .deletingLastPathComponent().deletingLastPathComponent()
    directories.append(package.appendingPathComponent(".build/debug"))
    return directories.lazy.map { $0.appendingPathComponent("elfhook").path }.first {
      FileManager.default.isExecutableFile(atPath: $0)
        && FileManager.default.fileExists(atPath: URL(fileURLWithPath: $0).deletingLastPathComponent().appendingPathComponent("libElfHookPreload.so").path)
    }
  }()

  static let missing = "elfhook and libElfHookPreload.so were not found: run `swift build` first"

  /// Runs `arguments` to completion (at most `timeout` seconds); its exit status and stderr.
  static func run(_ arguments: [String], timeout: TimeInterval = 60) throws -> (status: Int32, stderr: String) {
    let directory = try TemporaryDirectory("run")
    defer { directory.remove() }
    let stderr = directory.path("stderr")
    _ = FileManager.default.createFile(atPath: stderr, contents: nil)
    let process = Process()
    process.executableURL = URL(fileURLWithPath: arguments[0])
    process.arguments = Array(arguments.dropFirst())
    process.standardInput = FileHandle.nullDevice
    process.standardOutput = FileHandle.nullDevice
    process.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: stderr))
    try process.run()
    let deadline = Date().addingTimeInterval(timeout)
    while process.isRunning && Date() < deadline { usleep(10_000) }
    if process.isRunning {
      kill(process.processIdentifier, SIGKILL)
      process.waitUntilExit()
      throw ExporterUnderTest.Failure(description: "\(arguments.joined(separator: " ")) did not finish in \(Int(timeout)) s")
    }
    return (process.terminationStatus, (try? String(contentsOfFile: stderr, encoding: .utf8)) ?? "")
  }
}
