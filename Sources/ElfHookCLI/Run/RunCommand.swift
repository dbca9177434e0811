import ArgumentParser
import Foundation

/// `elfhook run -- COMMAND…`: runs a command with the monitor injected and reports every network
/// transaction it and its children made.
struct RunCommand: ParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "run",
    abstract: "Run a command with the network monitor injected, and summarize its transactions.",
    discussion: """
      COMMAND runs with libElfHookPreload.so in LD_PRELOAD. Its stdin, stdout, stderr and terminal \
      are its own, and elfhook exits with its exit status (128 + N when signal N killed it, as a \
      shell reports it). SIGTERM, SIGHUP and a SIGINT sent to elfhook by another process are passed \
      on to it. Children it forks and programs it executes are monitored too, each into a record \
      file of its own. Processes COMMAND leaves running in the background are waited for after it \
      exits, and their records merged, until a SIGINT or SIGTERM ends the wait.

      The injected library is small C: it records name lookups, and an HTTP/1.x client's \
      connections and exchanges (any method but CONNECT, heads up to 2 KiB, bodies framed by \
      Content-Length, chunked or the close, a 100 Continue: curl, wget, Python's urllib), in \
      plaintext or over OpenSSL or GnuTLS, and an HTTP/2 client's streams (ALPN h2, or prior \
      knowledge), by itself. The monitor (libElfHookMonitor.so, beside it) is loaded at the \
      first call the library does not record: NSS, an Upgrade: h2c, an accept, another 1xx \
      answer, an answer before the request's body ended. ELFHOOK_LIGHT_CLIENTS=0 loads it at \
      the first connection instead.

      At the end a summary goes to stderr: requests per host and endpoint, errors, p50/p95/max \
      durations, bytes, and the slowest requests with their DNS | connect | TLS | wait | transfer \
      phases. Records are kept in a crash-safe shared mapping the moment they complete, so a \
      process killed with SIGKILL loses none.

      Statically linked and set-user-ID programs cannot be injected; they still run, with one line \
      saying so. Nor are a Go program's connections seen (Go makes its system calls itself, not \
      through the C library): one line says that too. ELFHOOK_DISABLE=1 in the environment runs \
      COMMAND with the library loaded but idle.

      Examples:
        elfhook run -- curl -s https://example.org/
        elfhook run --output records.jsonl -- python3 app.py
        elfhook run --live -- nginx -g 'daemon off;'
        elfhook report --waterfall records.jsonl
      """
  )

  enum Format: String, ExpressibleByArgument, CaseIterable {
    case table, jsonl
  }

  @Option(name: .shortAndLong, help: ArgumentHelp(
    "Write every record to FILE as JSON Lines, as they arrive (created 0600, never through a symlink).",
    valueName: "FILE"))
  var output: String?

  @Option(help: "What goes to stderr: a summary table at the end (table), or each record as a JSON line as it arrives (jsonl).")
  var format: Format = .table

  @Flag(help: "Refresh a compact view on stderr every second while the command runs (for servers).")
  var live = false

  @Argument(parsing: .captureForPassthrough, help: ArgumentHelp("The command to run, after --.", valueName: "COMMAND"))
  var command: [String] = []

  func validate() throws {
    // The command is captured verbatim, so `elfhook run --help` would otherwise run "--help".
    if let first = command.first, first == "--help" || first == "-h" { throw CleanExit.helpRequest(self) }
    try options.validate()
  }

  /// What was parsed, as the run takes it.
  var options: RunOptions { RunOptions(output: output, format: format, live: live, command: command) }

  func run() throws {
    Foundation.exit(try options.monitor())
  }
}

/// elfhook's own output on stderr, written with write(2): a closed stderr (EPIPE, with SIGPIPE
/// ignored) loses the text but never ends elfhook while the command runs.
enum Terminal {
  static func say(_ message: String) { write("elfhook: \(message)\n") }

  static func write(_ text: String) { _ = writeAll(STDERR_FILENO, text) }

  static var isTerminal: Bool { isatty(STDERR_FILENO) == 1 }
  static var supportsColor: Bool { TerminalCapabilities.supportsColor(STDERR_FILENO) }
  static var width: Int { TerminalCapabilities.width(of: STDERR_FILENO) }
}
