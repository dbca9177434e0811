/// A compact view for a screen that is redrawn every second while `elfhook run --live` watches a
/// process: one line of totals, the busiest hosts, and the commonest kind of failed request. At
/// most 12 lines, each at most `width` columns, without colors (the caller owns the screen).
///
/// - Parameters:
///   - summary: The records so far.
///   - elapsedSeconds: How long the process has been running; rates are per second of it.
///   - width: The terminal's width in columns.
func renderLiveView(_ summary: TransactionSummary, elapsedSeconds: Double, width: Int) -> [String] {
  var totals = [
    "elfhook " + Units.clock(seconds: elapsedSeconds),
    plural(summary.requests.requests, "request")
      + " (\(Units.rate(summary.requests.requests, seconds: elapsedSeconds)))",
    plural(summary.errors, "error"),
    plural(summary.connectionsOpened + summary.connectionsAccepted, "connection"),
    plural(summary.dns.lookups, "DNS lookup"),
  ]
  if summary.droppedRecords > 0 { totals.append("\(Units.count(summary.droppedRecords)) dropped") }
  var lines = [totals.joined(separator: "  ")]
  guard !summary.hosts.isEmpty else {
    return (lines + ["  waiting for network traffic…"]).map { fit($0, width) }
  }
  let hostRows = 8
  var table = TextTable([
    ("HOST", .left), ("REQUESTS", .right), ("RATE", .right), ("ERRORS", .right), ("P50", .right), ("P95", .right),
  ])
  let hosts = summary.busiestHosts
  for (host, stats) in hosts.prefix(hostRows) {
    let quantiles = stats.http.durations.quantiles
    table.append(
      [
        host.description, Units.count(stats.http.requests), Units.rate(stats.http.requests, seconds: elapsedSeconds),
        Units.count(stats.errors), quantiles.map { Units.duration($0.p50) } ?? "-",
        quantiles.map { Units.duration($0.p95) } ?? "-",
      ].map { TextTable.Cell(printable($0)) })
  }
  lines += table.lines(width: width, style: TerminalStyle(color: false))
  if hosts.count > hostRows { lines.append("  … \(Units.count(hosts.count - hostRows)) more hosts") }
  if let failure = summary.requestFailures.commonest.first {
    let message = failure.message.isEmpty ? "" : ": " + failure.message
    lines.append(
      printable(
        "  most failed: \(summary.endpoint(at: failure.key.endpointRow)) \(failure.key.statusText) "
          + "×\(Units.count(failure.count))\(message)"))
  }
  return lines.map { fit($0, width) }
}

/// Cuts a line to the screen's width: a wrapped line would push the view down a row each redraw.
private func fit(_ line: String, _ width: Int) -> String {
  line.count > width ? String(line.prefix(max(width - 1, 0))) + "…" : line
}
