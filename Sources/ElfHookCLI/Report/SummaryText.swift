import NetMonitor

/// The summary `elfhook report` prints, and `elfhook run` at exit: a headline of totals, then
/// tables of hosts, endpoints, DNS names, failed requests, failed calls and the slowest requests,
/// each line at most `width` columns.
///
/// - Parameters:
///   - summary: The records seen.
///   - width: The terminal's width in columns.
///   - color: Whether to use ANSI colors (a terminal that is not `NO_COLOR`).
func renderSummary(_ summary: TransactionSummary, width: Int, color: Bool) -> String {
  let style = TerminalStyle(color: color)
  var lines = headline(summary, width: width, style)
  if summary.droppedRecords > 0 {
    lines.append(
      style.paint(
        "\(Units.count(summary.droppedRecords)) records were dropped "
          + "(\(summary.dropReason ?? "the record stream was full")): the counts below are low.", .red))
  }
  if summary.undecodedTLSConnections > 0 {
    lines.append(
      style.paint(
        "\(plural(summary.undecodedTLSConnections, "connection")) used TLS that elfhook cannot read (Java's, rustls, "
          + "a stripped static OpenSSL, OpenSSL's SSL BIO…: docs/limits.md): their TLS version and bytes are counted, "
          + "their HTTP is not.",
        .yellow))
  }
  if summary.unreadHTTPConnections > 0 {
    lines.append(
      style.paint(
        "\(plural(summary.unreadHTTPConnections, "connection")) stopped being read part way "
          + "(\(summary.firstHTTPError ?? "")): their requests after that are recorded incomplete.",
        .yellow))
  }
  for section in [
    hostSection(summary, width: width, style), endpointSection(summary, width: width, style),
    dnsSection(summary, width: width, style), requestFailureSection(summary, width: width, style),
    failureSection(summary, width: width, style), slowestSection(summary, width: width, style),
  ] where !section.isEmpty {
    lines.append("")
    lines += section
  }
  return lines.joined(separator: "\n")
}

/// How many rows a table shows before `… N more`: a summary is read at a glance.
private let tableRows = 10

/// The totals, wrapped to `width` at the commas.
private func headline(_ summary: TransactionSummary, width: Int, _ style: TerminalStyle) -> [String] {
  guard let span = summary.span else { return ["No records."] }
  let duration = Units.duration(Double(span.upperBound - span.lowerBound) / 1_000_000)
  var parts: [TextTable.Cell] = [
    TextTable.Cell("elfhook:", .bold), TextTable.Cell(plural(summary.requests.requests, "HTTP request") + ","),
    TextTable.Cell(plural(summary.connectionsOpened, "connection") + " opened,"),
  ]
  if summary.connectionsAccepted > 0 {
    parts.append(TextTable.Cell("\(Units.count(summary.connectionsAccepted)) accepted,"))
  }
  parts.append(TextTable.Cell(plural(summary.dns.lookups, "DNS lookup") + " in \(duration);"))
  parts.append(TextTable.Cell(plural(summary.errors, "error"), summary.errors > 0 ? .red : .green))
  var lines: [String] = []
  var line = ""
  var length = 0  // columns on screen: `line` also holds escape sequences
  for part in parts {
    if length + 1 + part.text.count > width && length > 0 {
      lines.append(line)
      (line, length) = (TextTable.indent, TextTable.indent.count)
    } else if length > 0 {
      (line, length) = (line + " ", length + 1)
    }
    line += style.paint(part.text, part.style)
    length += part.text.count
  }
  return lines + [line]
}

private func hostSection(_ summary: TransactionSummary, width: Int, _ style: TerminalStyle) -> [String] {
  guard !summary.hosts.isEmpty else { return [] }
  var table = TextTable(
    [
      ("HOST", .left), ("CONNS", .right), ("REQUESTS", .right), ("ERRORS", .right), ("P50", .right),
      ("P95", .right), ("MAX", .right), ("SENT", .right), ("RECEIVED", .right),
    ], dropOrder: ["MAX", "CONNS", "SENT", "P50"])
  let hosts = summary.busiestHosts
  for (host, stats) in hosts.prefix(tableRows) {
    table.append(
      [
        TextTable.Cell(printable(host.description)), countCell(stats.connections), countCell(stats.http.requests),
        errorCount(stats.errors),
      ] + quantileCells(stats.http.durations)
        + [TextTable.Cell(Units.bytes(stats.bytesSent)), TextTable.Cell(Units.bytes(stats.bytesReceived))])
  }
  return section("HOSTS", table, width: width, style, more: hosts.count - tableRows, "hosts")
}

private func endpointSection(_ summary: TransactionSummary, width: Int, _ style: TerminalStyle) -> [String] {
  guard !summary.endpoints.isEmpty else { return [] }
  var table = TextTable(
    [
      ("ENDPOINT", .left), ("REQUESTS", .right), ("ERRORS", .right), ("P50", .right), ("P95", .right),
      ("MAX", .right),
    ], dropOrder: ["MAX", "P50"])
  let endpoints = summary.busiestEndpoints
  for (endpoint, stats) in endpoints.prefix(tableRows) {
    table.append(
      [TextTable.Cell(printable(endpoint.description)), countCell(stats.requests), errorCount(stats.errors)]
        + quantileCells(stats.durations))
  }
  return section("ENDPOINTS", table, width: width, style, more: endpoints.count - tableRows, "endpoints")
}

private func dnsSection(_ summary: TransactionSummary, width: Int, _ style: TerminalStyle) -> [String] {
  guard let quantiles = summary.dns.durations.quantiles else { return [] }
  var table = TextTable(
    [
      ("NAME", .left), ("LOOKUPS", .right), ("FAILED", .right), ("P50", .right), ("MAX", .right),
    ], dropOrder: ["MAX"])
  let names = summary.busiestNames
  for (name, stats) in names.prefix(tableRows) {
    let nameQuantiles = stats.durations.quantiles
    table.append([
      TextTable.Cell(printable(name)), countCell(stats.lookups), errorCount(stats.failures),
      TextTable.Cell(nameQuantiles.map { Units.duration($0.p50) } ?? "-"),
      TextTable.Cell(nameQuantiles.map { Units.duration($0.maximum) } ?? "-"),
    ])
  }
  let title =
    "DNS  \(plural(summary.dns.lookups, "lookup")), \(Units.count(summary.dns.failures)) failed, "
    + "p50 \(Units.duration(quantiles.p50)), max \(Units.duration(quantiles.maximum))"
  return section(title, table, width: width, style, more: names.count - tableRows, "names")
}

private func requestFailureSection(_ summary: TransactionSummary, width: Int, _ style: TerminalStyle) -> [String] {
  let groups = summary.requestFailures.commonest
  guard !groups.isEmpty else { return [] }
  var table = TextTable(
    [("REQUEST", .left), ("STATUS", .right), ("COUNT", .right), ("MESSAGE", .left)], flexibleColumn: 3)
  for group in groups.prefix(tableRows) {
    table.append([
      TextTable.Cell(printable(summary.endpoint(at: group.key.endpointRow).description)),
      TextTable.Cell(printable(group.key.statusText), .red), countCell(group.count),
      TextTable.Cell(group.message.isEmpty ? "-" : printable(group.message)),
    ])
  }
  return section("FAILED REQUESTS", table, width: width, style, more: groups.count - tableRows, "kinds of failure")
}

private func failureSection(_ summary: TransactionSummary, width: Int, _ style: TerminalStyle) -> [String] {
  guard !summary.failures.isEmpty else { return [] }
  var table = TextTable(
    [("CALL", .left), ("CODE", .left), ("COUNT", .right), ("FIRST ON", .left), ("MESSAGE", .left)],
    flexibleColumn: 4, dropOrder: ["FIRST ON"])
  for failure in summary.commonestFailures {
    table.append([
      TextTable.Cell(printable(failure.key.call)), TextTable.Cell(printable(failure.key.code), .red),
      countCell(failure.count), TextTable.Cell(printable(failure.firstTarget)),
      TextTable.Cell(printable(failure.message)),
    ])
  }
  return section("FAILED CALLS (DNS and connections)", table, width: width, style)
}

private func slowestSection(_ summary: TransactionSummary, width: Int, _ style: TerminalStyle) -> [String] {
  let slowest = summary.slowest.requests
  guard !slowest.isEmpty else { return [] }
  var table = TextTable(
    [("DURATION", .right), ("STATUS", .right), ("REQUEST", .left)]
      + RequestPhase.allCases.map { ($0.name.uppercased(), .right) },
    // The duration is the sum of the phases: the one column a narrow terminal can spare.
    flexibleColumn: 2, dropOrder: ["DURATION"])
  for request in slowest {
    let phases = request.phases
    table.append(
      [
        TextTable.Cell(Units.duration(request.http.durationMs)), statusCell(request.http),
        TextTable.Cell(requestLabel(request.http)),
      ]
        + RequestPhase.allCases.map { TextTable.Cell(phases[$0] > 0 ? Units.duration(phases[$0]) : "-") })
  }
  return section("SLOWEST REQUESTS", table, width: width, style)
}

/// A bold title over an indented table, and `… N more <noun>` when rows were left out.
private func section(
  _ title: String, _ table: TextTable, width: Int, _ style: TerminalStyle, more: Int = 0, _ noun: String = ""
) -> [String] {
  var lines = [style.paint(title, .bold)] + table.lines(width: width, style: style)
  if more > 0 { lines.append(TextTable.indent + style.paint("… \(Units.count(more)) more \(noun)", .dim)) }
  return lines
}

/// `GET example.com/path?q`: what a reader recognizes of a request, terminal-safe.
func requestLabel(_ http: HTTPRecord) -> String {
  printable("\(http.method) \(RequestAddress(http).description)")
}

/// The status, red for a failure (5xx, or `-` when no response came); a gRPC call's own status
/// by name (`OK`, `NOT_FOUND`).
func statusCell(_ http: HTTPRecord) -> TextTable.Cell {
  TextTable.Cell(http.statusText, http.isFailure ? .red : nil)
}

private func quantileCells(_ durations: DurationSamples) -> [TextTable.Cell] {
  guard let quantiles = durations.quantiles else { return Array(repeating: TextTable.Cell("-"), count: 3) }
  return [quantiles.p50, quantiles.p95, quantiles.maximum].map { TextTable.Cell(Units.duration($0)) }
}

private func countCell(_ number: Int) -> TextTable.Cell {
  TextTable.Cell(Units.count(number))
}

private func errorCount(_ number: Int) -> TextTable.Cell {
  TextTable.Cell(Units.count(number), number > 0 ? .red : nil)
}

/// "1 request", "2 requests".
func plural(_ number: Int, _ noun: String) -> String {
  "\(Units.count(number)) \(noun)" + (number == 1 ? "" : "s")
}
