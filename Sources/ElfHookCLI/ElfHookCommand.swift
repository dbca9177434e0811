import ArgumentParser
import Foundation

/// The root `elfhook` command. Each subcommand lives in its own file in this target; adding one
/// means writing its `ParsableCommand` and listing it in `subcommands` below. A subcommand reports a
/// bad input (a missing file, a dead process) by throwing ``CommandFailure``: `main()` prints it as
/// one line, `elfhook: <message>`, on stderr and exits with status 1.
public struct ElfHookCommand: ParsableCommand {
  public static let configuration = CommandConfiguration(
    commandName: "elfhook",
    abstract: "Monitor the network transactions of any dynamically linked program, and inspect its GOT/PLT import slots (fishhook for Linux).",
    discussion: """
      Examples:
        elfhook run -- curl -s http://127.0.0.1:8080/
        elfhook run --output records.jsonl -- python3 app.py
        elfhook inspect /usr/bin/curl
        elfhook inspect --json --pid 1234
        elfhook export --otlp http://127.0.0.1:4318 records.jsonl
        elfhook report --format jsonl /dev/shm/elfhook/*.ring
        elfhook export --jsonl records.jsonl --follow /dev/shm/elfhook
      """,
    version: ElfHookVersion.current,
    subcommands: [RunCommand.self, InspectCommand.self, ReportCommand.self, ExportCommand.self]
  )

  public init() {}
}

/// A failure the user caused (a bad input file, a missing process): `main` prints
/// `elfhook: <message>` as one line on stderr and exits with status 1.
enum CommandFailure: Error, CustomStringConvertible {
  case input(String)

  var description: String {
    switch self {
    case .input(let message): return message
    }
  }
}

extension ElfHookCommand {
  /// Runs the command line: parses the arguments, runs the subcommand, and turns a
  /// ``CommandFailure`` into one line on stderr and exit status 1. Argument errors keep
  /// ArgumentParser's usage message and status. `elfhook run`'s usual forms are read without
  /// ArgumentParser (``RunCommand/parsedDirectly(_:)``), and run with no `RunCommand` made.
  public static func main() {
    do {
      if let run = RunCommand.parsedDirectly(CommandLine.arguments.dropFirst()) {
        try run.validate()
        Foundation.exit(try run.monitor())
      }
      var command = try parseAsRoot()
      try command.run()
    } catch let failure as CommandFailure {
      FileHandle.standardError.write(Data("elfhook: \(failure.description)\n".utf8))
      Foundation.exit(1)
    } catch {
      exit(withError: error)
    }
  }
}
