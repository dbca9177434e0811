import ArgumentParser
import Foundation
import NetMonitor

/// `elfhook report`: the tables, a timing waterfall and an HTML page from record files.
struct ReportCommand: ParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "report",
    abstract:
      "Summarize record files: hosts, endpoints, DNS, failed calls, the slowest requests, and a timing waterfall.",
    discussion: """
      Reads record files — JSON Lines as `elfhook run --output FILE` writes them (one record per \
      line: dns, connection or http), or the record rings an injected process writes to \
      ELFHOOK_OUTPUT (read in place, their records left in them) — and prints a line of totals, then the tables: \
      HOSTS (server name and port), ENDPOINTS (method, host and path without the query string), \
      DNS (getaddrinfo calls per name), FAILED CALLS (DNS and connection failures by call and \
      code), and the SLOWEST REQUESTS split into their phases.

      A request's phases are DNS | connect | TLS (the setup of its connection, counted for the \
      request that opened it) | wait (until the first response byte) | transfer (the rest of the \
      response). An error is an HTTP status of 500 or more, a request without a response, a failed \
      connection or a failed DNS lookup. Percentiles are nearest-rank: durations actually seen, up \
      to 10,000 requests a row; past that, a row counts its durations in a histogram (bounded \
      memory for a long run) and its percentiles are within 0.4%.

      --waterfall adds one line per request: a bar of its phases on a time axis all lines share. \
      --html writes all of it as one self-contained page (it needs no network to open) with a \
      browser-style waterfall: hover a bar for its phase times, filter and sort the requests.

      Examples:
        elfhook run --output curl.jsonl -- curl -s https://example.com/
        elfhook report curl.jsonl
        elfhook report --waterfall --html report.html app-*.jsonl
      """
  )

  @Option(
    help: ArgumentHelp(
      "Also write a self-contained HTML report (tables and a timing waterfall) to FILE.", valueName: "FILE"))
  var html: String?

  @Flag(help: "Also print one line per HTTP request with a DNS | connect | TLS | wait | transfer bar.")
  var waterfall = false

  @Argument(
    help: ArgumentHelp("Record files: JSON Lines (`elfhook run --output`) or record rings (ELFHOOK_OUTPUT).", valueName: "RECORDS"))
  var records: [String]

  func run() throws {
    let transactions: [Transaction]
    var drops = Drops()
    do {
      transactions = try RecordFiles.load(paths: records, skipped: { Terminal.say($0.description) }) { ring in
        drops.count += ring.count
        drops.reason = drops.reason ?? ring.reason
      }
    } catch {
      throw CommandFailure.input("\(error)")
    }
    let width = TerminalCapabilities.width(of: STDOUT_FILENO)
    print(text(transactions, drops: drops, width: width, color: TerminalCapabilities.supportsColor(STDOUT_FILENO)))
    if let html {
      try writeHTML(transactions, drops: drops, to: html)
    }
  }

  /// Records the processes dropped (their rings were full), and why, said of the first such ring.
  struct Drops {
    var count: UInt64 = 0
    var reason: String?
  }

  /// What the command prints: the summary, then the waterfall when asked for.
  func text(_ transactions: [Transaction], drops: Drops = Drops(), width: Int, color: Bool) -> String {
    var summary = TransactionSummary()
    for transaction in transactions { summary.add(transaction) }
    summary.droppedRecords = drops.count
    summary.dropReason = drops.reason
    var text = renderSummary(summary, width: width, color: color)
    if waterfall {
      text += "\n\n" + renderWaterfall(TimedRequest.all(in: transactions), width: width, color: color)
    }
    return text
  }

  private func writeHTML(_ transactions: [Transaction], drops: Drops, to path: String) throws {
    let title = "elfhook report: " + records.map { ($0 as NSString).lastPathComponent }.joined(separator: ", ")
    let page = HTMLReport.render(transactions, title: title, droppedRecords: drops.count)
    // Never through a symbolic link (a planted one in /tmp); the system's reason when it fails.
    let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0o644)
    guard fd >= 0 else {
      let reason = errno == ELOOP ? "it is a symbolic link; refusing to follow it" : String(cString: strerror(errno))
      throw CommandFailure.input("cannot write \(path): \(reason)")
    }
    defer { close(fd) }
    guard writeAll(fd, page) else { throw CommandFailure.input("cannot write \(path): \(String(cString: strerror(errno)))") }
    FileHandle.standardError.write(Data("elfhook: wrote \(path)\n".utf8))
  }
}
