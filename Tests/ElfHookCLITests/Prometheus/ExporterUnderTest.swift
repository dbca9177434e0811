import Foundation
import Glibc
import Synchronization

@testable import ElfHookCLI

/// The Prometheus exporter a scrape test runs, serving record files on 127.0.0.1: in-process through
/// `PrometheusExport.serve` (what `elfhook export --prometheus` calls), or as the built command.
/// The tests use `start` — switch its body to `.command` once `elfhook export` exists.
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

  /// The exporter the tests use.
  static func start(paths: [String]) throws -> ExporterUnderTest {
    try inProcess(paths: paths)
  }

  /// `PrometheusExport.serve` on a thread of its own, on a port the system chooses.
  static func inProcess(paths: [String]) throws -> ExporterUnderTest {
    let state = Mutex<(port: Int?, error: String?, stop: Bool, done: Bool)>((nil, nil, false, false))
    let thread = Thread {
      do {
        try PrometheusExport.serve(
          address: "127.0.0.1:0", paths: paths,
          listening: { endpoint in state.withLock { $0.port = endpoint.port } },
          until: { state.withLock { $0.stop } })
      } catch {
        state.withLock { $0.error = String(describing: error) }
      }
      state.withLock { $0.done = true }
    }
    thread.start()
    let deadline = Date().addingTimeInterval(10)
    while Date() < deadline {
      let (port, error) = state.withLock { ($0.port, $0.error) }
      if let error { throw Failure(description: error) }
      if let port {
        return ExporterUnderTest(port: port) {
          state.withLock { $0.stop = true }
          let end = Date().addingTimeInterval(10)
          while !state.withLock({ $0.done }) && Date() < end { usleep(10_000) }
        }
      }
      usleep(10_000)
    }
    state.withLock { $0.stop = true }
    throw Failure(description: "the in-process exporter did not start listening in 10 s")
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
