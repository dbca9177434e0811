import Foundation
import Testing
import TestSupport

/// Headless Chromium, to test the HTML report as a browser renders it: the DOM after the page's
/// scripts ran, and screenshots.
enum Chromium {
  /// The browser's path, or `nil` when it is not installed (Debian and Ubuntu: the `chromium`
  /// package).
  static let path: String? = {
    let directories = (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin").split(separator: ":")
    for name in ["chromium", "chromium-browser"] {
      for directory in directories where FileManager.default.isExecutableFile(atPath: "\(directory)/\(name)") {
        return "\(directory)/\(name)"
      }
    }
    return nil
  }()

  static let missing: Comment = "Chromium is not installed: `apt-get install chromium` (CI installs it)"

  struct Failure: Error, CustomStringConvertible {
    var description: String
  }

  /// The DOM of `page` after its scripts ran (`--dump-dom`), in a 1400×900 window.
  static func dumpDOM(_ page: String, in directory: TemporaryDirectory) throws -> String {
    try run(["--dump-dom", URL(fileURLWithPath: page).absoluteString], in: directory)
  }

  /// Renders `page` in a 1400×900 window and saves a PNG to `screenshot`.
  static func screenshot(_ page: String, to screenshot: String, in directory: TemporaryDirectory) throws {
    _ = try run(["--screenshot=\(screenshot)", URL(fileURLWithPath: page).absoluteString], in: directory)
  }

  /// Runs the browser with its own profile, stdout to a file (a DOM can outgrow a pipe's buffer);
  /// kills it after `timeout` seconds.
  private static func run(_ arguments: [String], in directory: TemporaryDirectory, timeout: TimeInterval = 90) throws
    -> String
  {
    guard let path else { throw Failure(description: missing.rawValue) }
    let output = directory.path("chromium-\(UUID().uuidString).out")
    _ = FileManager.default.createFile(atPath: output, contents: nil)
    let process = Process()
    process.executableURL = URL(fileURLWithPath: path)
    process.arguments =
      [
        "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-extensions", "--hide-scrollbars",
        "--window-size=1400,900", "--user-data-dir=\(directory.path("chromium-profile"))",
      ] + arguments
    process.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: output))
    process.standardError = FileHandle.nullDevice
    try process.run()
    let deadline = Date().addingTimeInterval(timeout)
    while process.isRunning && Date() < deadline { Thread.sleep(forTimeInterval: 0.05) }
    if process.isRunning {
      process.terminate()
      throw Failure(description: "chromium \(arguments.joined(separator: " ")) did not finish in \(Int(timeout)) s")
    }
    guard process.terminationStatus == 0 else {
      throw Failure(
        description: "chromium \(arguments.joined(separator: " ")) exited with status \(process.terminationStatus)")
    }
    return try String(contentsOfFile: output, encoding: .utf8)
  }
}
