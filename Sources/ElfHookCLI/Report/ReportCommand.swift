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

      --format jsonl writes the records themselves to stdout instead, one JSON object per line, \
      exactly as `elfhook run --output` writes them: the way to turn record rings (a service \
      monitored with LD_PRELOAD and ELFHOOK_OUTPUT) into JSON Lines, or to merge JSON Lines files. \
      Records are written file after file, each file in its order; rings are read in place.

      --waterfall adds one line per request: a bar of its phases on a time axis all lines share. \
      --html writes all of it as one self-contained page (it needs no network to open) with a \
      browser-style waterfall: hover a bar for its phase times, filter and sort the requests.

      Examples:
        elfhook run --output curl.jsonl -- curl -s https://example.com/
        elfhook report curl.jsonl
        elfhook report --waterfall --html report.html app-*.jsonl
        elfhook report --format jsonl /dev/shm/elfhook/*.ring > records.jsonl
      """
  )

  @Option(
    help: ArgumentHelp(
      "Also write a self-contained HTML report (tables and a timing waterfall) to FILE.", valueName: "FILE"))
  var html: String?

  enum Format: String, ExpressibleByArgument, CaseIterable {
    case table, jsonl
  }

  @Option(help: "What goes to stdout: the summary tables (table), or every record as a JSON line (jsonl).")
  var format: Format = .table

  @Flag(help: "Also print one line per HTTP request with a DNS | connect | TLS | wait | transfer bar.")
  var waterfall = false

  @Argument(
    help: ArgumentHelp("Record files: JSON Lines (`elfhook run --output`) or record rings (ELFHOOK_OUTPUT).", valueName: "RECORDS"))
  var records: [String]

  func validate() throws {
    if format == .jsonl && (html != nil || waterfall) {
      throw ValidationError("--format jsonl writes records, not a report: leave out --html and --waterfall")
    }
  }

  func run() throws {
    if format == .jsonl { return try writeJSONLines() }
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

  /// Every record of the files to stdout as JSON Lines, written in blocks of about 64 KiB (the
  /// encoding `elfhook run --output` uses: `Transaction.appendJSONLine`). Lines that are not
  /// records, and records a ring's process dropped, are said on stderr.
  private func writeJSONLines() throws {
    var buffer: [UInt8] = []
    buffer.reserveCapacity(1 << 17)
    var failed = false
    func flush() {
      guard !failed, !buffer.isEmpty else { return }
      failed = !buffer.withUnsafeBytes { writeAll(STDOUT_FILENO, $0) }
      buffer.removeAll(keepingCapacity: true)
    }
    do {
      try RecordFiles.forEach(
        paths: records, skipped: { Terminal.say($0.description) },
        dropped: { Terminal.say("\($0.count) records were dropped: \($0.reason)") }
      ) { transaction in
        transaction.appendJSONLine(to: &buffer)
        if buffer.count >= 1 << 16 { flush() }
      }
    } catch {
      flush()
      throw CommandFailure.input("\(error)")
    }
    flush()
    if failed { throw CommandFailure.input("cannot write to stdout: \(String(cString: strerror(errno)))") }
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
