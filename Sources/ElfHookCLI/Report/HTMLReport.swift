import NetMonitor

/// A report of records as one self-contained HTML page — inline style and script, nothing fetched
/// from the network, system fonts — that a person opens in any browser or attaches to a ticket.
///
/// The page holds the totals, the tables `elfhook report` prints (hosts, endpoints, DNS names,
/// failed calls) and a timing waterfall like a browser's network panel: one row per HTTP request
/// with its DNS, connect, TLS, wait and transfer phases on a time axis all rows share. DNS lookups
/// and connections that carried no HTTP (failed connects, databases) get rows of their own on the
/// same axis. Stable ids and classes (`#waterfall`, `tr.request`, `span.phase.dns`…) let tests and
/// scripts query it.
enum HTMLReport {
  /// Rows one table holds at most: a browser stays responsive with thousands of rows, and a
  /// capture of a busy server can hold millions of requests.
  static let maximumRows = 5000

  /// The page for `transactions`, in any order.
  ///
  /// - Parameters:
  ///   - transactions: The records to report.
  ///   - title: The page's title and heading.
  ///   - droppedRecords: Records the processes dropped (their record rings were full).
  static func render(_ transactions: [Transaction], title: String, droppedRecords: UInt64 = 0) -> String {
    var summary = TransactionSummary(slowestCapacity: 0)
    for transaction in transactions { summary.add(transaction) }
    summary.droppedRecords = droppedRecords
    let requests = TimedRequest.all(in: transactions)
    let others = recordsWithoutHTTP(transactions)
    let axis = TimeAxis(
      requests.map { ($0.startUnixNs, $0.phases.total) } + others.map { ($0.startUnixNs, $0.durationMs) })
    return """
      <!DOCTYPE html>
      <html lang="en">
      <head>
      <meta charset="utf-8">
      <meta name="viewport" content="width=device-width, initial-scale=1">
      <title>\(htmlEscaped(title))</title>
      <style>\(styleSheet)</style>
      </head>
      <body>
      \(header(title, transactions, summary))
      <main>
      \(cards(summary))
      \(hostSection(summary))
      \(waterfallSection(requests, axis))
      \(endpointSection(summary))
      \(dnsSection(summary))
      \(requestFailureSection(summary))
      \(failureSection(summary))
      \(otherRecordSection(others, axis))
      </main>
      <script>\(script)</script>
      </body>
      </html>

      """
  }

  /// DNS lookups, and connections no HTTP record refers to: what the waterfall's rows do not show.
  static func recordsWithoutHTTP(_ transactions: [Transaction]) -> [Transaction] {
    var connectionsWithHTTP = Set<ConnectionKey>()
    for case .http(let http) in transactions { connectionsWithHTTP.insert(ConnectionKey(http)) }
    let others = transactions.filter { transaction in
      switch transaction {
      case .dns: true
      case .connection(let connection): !connectionsWithHTTP.contains(ConnectionKey(connection))
      case .http: false
      }
    }
    return others.sorted { $0.startUnixNs < $1.startUnixNs }
  }

  private static func header(_ title: String, _ transactions: [Transaction], _ summary: TransactionSummary) -> String {
    var processes: [Int32: String] = [:]
    for transaction in transactions { processes[transaction.pid] = transaction.process }
    let names = processes.sorted { $0.key < $1.key }.map { "\($0.value) (\($0.key))" }
    var facts = ["\(Units.count(summary.records)) records"]
    if !names.isEmpty {
      facts.append(
        (names.count == 1 ? "process " : "processes ") + names.prefix(5).joined(separator: ", ")
          + (names.count > 5 ? " and \(names.count - 5) more" : ""))
    }
    if let span = summary.span {
      facts.append(
        Units.utcTime(unixNs: span.lowerBound) + " for "
          + Units.duration(Double(span.upperBound - span.lowerBound) / 1_000_000))
    }
    return """
      <header>
      <h1>\(htmlEscaped(title))</h1>
      <p class="facts">\(htmlEscaped(facts.joined(separator: " · ")))</p>
      <nav><a href="#hosts-section">Hosts</a><a href="#waterfall-section">Waterfall</a>\
      <a href="#endpoints-section">Endpoints</a><a href="#dns-section">DNS</a>\
      <a href="#request-failures-section">Failed requests</a><a href="#failures-section">Failed calls</a><a href="#other-records-section">Other records</a></nav>
      </header>
      """
  }

  private static func cards(_ summary: TransactionSummary) -> String {
    let quantiles = summary.requests.durations.quantiles
    // Only the error count (and dropped records) turn a card red; a failure count elsewhere is
    // red text, so one glance finds the problem and the page does not shout.
    var cards: [(label: String, value: String, detail: String, bad: Bool, badDetail: Bool)] = [
      (
        "HTTP requests", Units.count(summary.requests.requests), "\(Units.count(summary.requests.errors)) failed",
        false, summary.requests.errors > 0
      ),
      ("Errors", Units.count(summary.errors), "HTTP 5xx, connections, DNS", summary.errors > 0, false),
      ("Median", quantiles.map { Units.duration($0.p50) } ?? "-", "request duration", false, false),
      (
        "p95", quantiles.map { Units.duration($0.p95) } ?? "-",
        "max " + (quantiles.map { Units.duration($0.maximum) } ?? "-"), false, false
      ),
      (
        "Connections", Units.count(summary.connectionsOpened + summary.connectionsAccepted),
        "\(Units.count(summary.failedConnections)) failed, \(Units.count(summary.connectionsAccepted)) accepted",
        false, summary.failedConnections > 0
      ),
      (
        "DNS lookups", Units.count(summary.dns.lookups), "\(Units.count(summary.dns.failures)) failed", false,
        summary.dns.failures > 0
      ),
      ("Sent", Units.bytes(summary.requests.bytesSent), "HTTP requests", false, false),
      ("Received", Units.bytes(summary.requests.bytesReceived), "HTTP responses", false, false),
    ]
    if summary.droppedRecords > 0 {
      cards.append(("Dropped records", Units.count(summary.droppedRecords), "the counts are low", true, false))
    }
    // The terminal summary's line about them: TLS seen on the wire, its library not one elfhook hooks.
    if summary.undecodedTLSConnections > 0 {
      cards.append(
        (
          "TLS not read", Units.count(summary.undecodedTLSConnections),
          "a library, or a way into one, elfhook does not hook (Java, rustls, a stripped static OpenSSL, "
            + "OpenSSL's SSL BIO…): their HTTP is not seen", false, true
        ))
    }
    if summary.unreadHTTPConnections > 0 {
      cards.append(
        (
          "HTTP read part way", Units.count(summary.unreadHTTPConnections), summary.firstHTTPError ?? "", false,
          true
        ))
    }
    let items = cards.map { card in
      "<div class=\"card\(card.bad ? " bad" : "")\"><div class=\"label\">\(card.label)</div>"
        + "<div class=\"value\">\(htmlEscaped(card.value))</div>"
        + "<div class=\"detail\(card.badDetail ? " bad" : "")\">\(htmlEscaped(card.detail))</div></div>"
    }
    return "<div class=\"cards\" id=\"totals\">" + items.joined() + "</div>"
  }

  /// `<section>` with a heading, a note, and `body` — or a line saying there is nothing to show.
  static func section(id: String, title: String, note: String, body: String?) -> String {
    """
    <section id="\(id)-section">
    <h2>\(title) <span class="note">\(htmlEscaped(note))</span></h2>
    \(body ?? "<p class=\"empty\">None.</p>")
    </section>
    """
  }

  /// A table with a heading row; `cells` are HTML already (escaped by the caller), and columns
  /// whose title is in `numeric` are right-aligned.
  static func table(id: String, columns: [String], numeric: Set<String>, rows: [[String]]) -> String {
    let heading = columns.map { "<th\(numeric.contains($0) ? " class=\"num\"" : "")>\($0)</th>" }.joined()
    let body = rows.map { row in
      let cells = zip(columns, row).map { column, cell in
        "<td\(numeric.contains(column) ? " class=\"num\"" : "")>\(cell)</td>"
      }
      return "<tr>" + cells.joined() + "</tr>"
    }
    return "<table id=\"\(id)\"><thead><tr>\(heading)</tr></thead><tbody>\n"
      + body.joined(separator: "\n") + "\n</tbody></table>"
  }

  /// `… and N more` under a table that was cut at `maximumRows`.
  static func moreRows(_ count: Int, _ noun: String) -> String {
    count > 0 ? "<p class=\"more\">… and \(Units.count(count)) more \(noun), left out to keep the page fast.</p>" : ""
  }
}
