import ArgumentParser
import CProcessControl
import Foundation

/// `elfhook run`'s options and command, however they were read: by ArgumentParser
/// (``RunCommand/options``) or directly (``RunCommand/parsedDirectly(_:)``), which never makes a
/// `RunCommand`: its property wrappers' first use looks up protocol conformances by scanning the
/// binary's conformance records (`elfhook run -- true`, the suite's build: 22.5 M instructions →
/// 18.9 M with this, the command's program headers alone and `realpath`).
struct RunOptions: Equatable {
  var output: String?
  var format: RunCommand.Format = .table
  var live = false
  /// As captured: it may begin with `--`.
  var command: [String]

  func validate() throws {
    // What is captured starts at the first word that is not one of the options: one that starts
    // with "-" (but for "--") is a mistyped option, never a command.
    if let first = command.first, first != "--", first.hasPrefix("-") {
      throw ValidationError("Unknown option '\(first)' (the command to run comes after --)")
    }
    if arguments.isEmpty { throw ValidationError("Missing the command to run: elfhook run [OPTIONS] -- COMMAND [ARGS…]") }
  }

  /// The command line after an optional leading `--`.
  private var arguments: [String] { command.first == "--" ? Array(command.dropFirst()) : command }

  /// Runs the command monitored; returns the status elfhook exits with (the command's, as a shell
  /// reports it). The record directory is removed on every path out.
  func monitor() throws -> Int32 {
    var environment = ProcessEnvironment.current()
    let library = try PreloadLibrary.locate(environment: environment)
    let outputFile = try output.map { (path: String) throws(CommandFailure) in try RecordOutputFile(path: path) }
    let collector = try RingCollector(environment: environment)
    defer { collector.remove() }

    let preloaded = environment["LD_PRELOAD"].flatMap { $0.isEmpty ? nil : $0 }
    environment["LD_PRELOAD"] = preloaded.map { library + ":" + $0 } ?? library
    environment["ELFHOOK_OUTPUT"] = collector.outputPattern
    // The directory is the run's: once it is removed, processes the command left say nothing.
    environment["ELFHOOK_RUN"] = "1"
    switch CommandPreflight.finding(command: arguments[0], environment: environment) {
    case .unmonitored(let reason): Terminal.say("\(reason); it runs unmonitored")
    case .partlySeen(let limit): Terminal.say(limit)
    case nil: break
    }

    // The processes the command leaves running become elfhook's children when their parent exits:
    // their records are merged too, until they exit.
    if elfhook_adopt_orphans() != 0 { Terminal.say("cannot wait for the processes the command leaves running: \(String(cString: strerror(errno)))") }
    let session = RunSession(collector: collector, outputFile: outputFile, format: format, live: live)
    let signals = SignalRelay()
    let child: ChildProcess
    do {
      child = try ChildProcess.spawn(arguments, environment: environment, defaultSIGPIPE: !signals.callerIgnoredSIGPIPE)
    } catch {
      signals.restore()
      Terminal.say(error.description)
      return error.exitStatus
    }
    let exit = session.supervise(child, signals: signals)
    signals.restore()
    session.finish()
    if let message = exit.signalMessage { Terminal.say("\(arguments[0]): \(message)") }
    return exit.shellStatus
  }
}
