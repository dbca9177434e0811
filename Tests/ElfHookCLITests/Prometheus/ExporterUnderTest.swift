import Foundation
import Glibc
import TestSupport

@testable import ElfHookCLI

/// The Prometheus exporter a scrape test runs: the built `elfhook export --prometheus`, serving
/// record files on 127.0.0.1.
final class ExporterUnderTest: Sendable {
  struct Failure: Error, CustomStringConvertible {
    var description: String
  }

  /// The port the exporter listens on.
  let port: Int
  private let stopper: @Sendable () -> Void

  private init(port: Int, stopper: @escaping @Sendable () -> Void) {
    self.port = port
    self.stopper = stopper
  }

  /// The built command, `elfhook export --prometheus 127.0.0.1:PORT PATHS…`; ready once it says
  /// `serving Prometheus metrics` on stderr.
  static func command(elfhook: String, paths: [String], in directory: TemporaryDirectory) throws -> ExporterUnderTest {
    let port = try HTTPGet.freePort()
    let log = directory.path("export.stderr")
    _ = FileManager.default.createFile(atPath: log, contents: nil)
    let process = Process()
    process.executableURL = URL(fileURLWithPath: elfhook)
    process.arguments = ["export", "--prometheus", "127.0.0.1:\(port)"] + paths
    process.standardInput = FileHandle.nullDevice
    process.standardOutput = FileHandle.nullDevice
    process.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: log))
    try process.run()
    let processID = process.processIdentifier
    let stop: @Sendable () -> Void = {
      kill(processID, SIGTERM)
      var status: Int32 = 0
      waitpid(processID, &status, 0)
    }
    let deadline = Date().addingTimeInterval(10)
    while Date() < deadline {
      let text = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
      if text.contains("serving Prometheus metrics") { return ExporterUnderTest(port: port, stopper: stop) }
      if !process.isRunning { throw Failure(description: "elfhook export exited: \(text)") }
      usleep(20_000)
    }
    stop()
    throw Failure(description: "elfhook export did not start listening in 10 s")
  }

  /// Stops serving (and, for the command, ends the process).
  func stop() { stopper() }
}
