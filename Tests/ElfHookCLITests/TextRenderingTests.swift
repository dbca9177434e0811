import NetMonitor
import Testing

@testable import ElfHookCLI

/// The terminal views: the summary, the waterfall and the live view.
@Suite("Terminal rendering")
struct TextRenderingTests {
  let scenario = ReportScenario()

  var summary: TransactionSummary {
    var summary = TransactionSummary()
    for transaction in scenario.transactions { summary.add(transaction) }
    return summary
  }

  /// The text as the terminal shows it: escape sequences take no columns.
  func visible(_ line: String) -> String {
    var result = ""
    var inEscape = false
    for character in line {
      if character == "\u{1B}" {
        inEscape = true
      } else if inEscape {
        inEscape = character != "m"
      } else {
        result.append(character)
      }
    }
    return result
  }

  /// The lines of the table under `heading`, up to the next blank line.
  func table(_ heading: String, in text: String) -> [String] {
    let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
    guard let start = lines.firstIndex(where: { $0.hasPrefix(heading) }) else { return [] }
    return Array(lines[(start + 1)...].prefix { !$0.isEmpty })
  }

  @Test("a request's address in every target form: origin, absolute (to a proxy), CONNECT's authority, OPTIONS *")
  func requestAddresses() {
    func record(_ method: String, _ target: String) -> HTTPRecord {
      ExportMappingTests.record(method: method, host: "proxy.example:3128", target: target)
    }
    let cases: [(HTTPRecord, address: String, endpoint: String)] = [
      (record("GET", "/a/b?q=1"), "proxy.example:3128/a/b?q=1", "GET proxy.example:3128/a/b"),
      (record("GET", "http://origin.example:8080/p?x=1"), "origin.example:8080/p?x=1", "GET proxy.example:3128/p"),
      (record("GET", "http://origin.example"), "origin.example", "GET proxy.example:3128/"),
      (record("CONNECT", "origin.example:443"), "origin.example:443", "CONNECT proxy.example:3128"),
      (record("OPTIONS", "*"), "proxy.example:3128 *", "OPTIONS proxy.example:3128 *"),
    ]
    for (http, address, endpoint) in cases {
      #expect(RequestAddress(http).description == address)
      #expect(requestLabel(http) == "\(http.method) \(address)")
      #expect(EndpointKey(http).description == endpoint)
    }
  }

  @Test("the summary fits the width, aligns its columns and shows every section", arguments: [72, 100, 160])
  func summaryLayout(width: Int) {
    let text = renderSummary(summary, width: width, color: false)
    #expect(!text.contains("\u{1B}"))
    for line in text.split(separator: "\n") { #expect(line.count <= width, "\(line)") }
    let headline = String(text.split(separator: "\n\n")[0]).replacing("\n  ", with: " ")
    #expect(headline.hasPrefix("elfhook: 23 HTTP requests, 8 connections opened, 1 accepted, 5 DNS lookups in "))
    #expect(headline.hasSuffix("; 7 errors"))
    for heading in ["HOSTS", "ENDPOINTS", "DNS  5 lookups, 1 failed", "FAILED CALLS", "SLOWEST REQUESTS"] {
      #expect(text.contains("\n\(heading)"), "\(heading)")
    }
    // Right-aligned last columns: every line of a table ends in the same column.
    for heading in ["HOSTS", "ENDPOINTS", "SLOWEST REQUESTS"] {
      let lines = table(heading, in: text).filter { !$0.contains("… ") || !$0.hasSuffix("more endpoints") }
      #expect(Set(lines.map(\.count)).count == 1, "\(heading): \(lines)")
    }
    let hosts = table("HOSTS", in: text)
    #expect(hosts.first?.hasPrefix("  HOST") == true)
    #expect(hosts.dropFirst().first?.hasPrefix("  api.example.com:443") == true)  // most requests first
    #expect(text.contains("ECONNREFUSED"))
  }

  @Test("the summary's headline numbers and units")
  func summaryValues() throws {
    let text = renderSummary(summary, width: 160, color: false)
    let api = try #require(table("HOSTS", in: text).first { $0.contains("api.example.com:443") })
    let fields = api.split(separator: " ", omittingEmptySubsequences: true)
    #expect(fields[1] == "2" && fields[2] == "9" && fields[3] == "2")  // conns, requests, errors
    let p50 = try #require(summary.hosts[HostKey(address: "api.example.com", port: 443)]?.http.durations.quantiles?.p50)
    #expect(api.contains(Units.duration(p50)))
    #expect(api.contains("ms") && api.contains("KiB"))
  }

  @Test("color marks errors and headings, and changes no visible text")
  func color() {
    let plain = renderSummary(summary, width: 120, color: false)
    let colored = renderSummary(summary, width: 120, color: true)
    #expect(colored.contains("\u{1B}[31m"))
    #expect(colored.contains("\u{1B}[1m"))
    #expect(visible(colored) == plain)
  }

  @Test("dropped records are said first, and an empty summary says so")
  func droppedAndEmpty() {
    var summary = self.summary
    summary.droppedRecords = 1_234
    let lines = renderSummary(summary, width: 100, color: false).split(separator: "\n")
    #expect(lines[1].hasPrefix("1,234 records were dropped"))
    #expect(renderSummary(TransactionSummary(), width: 80, color: false) == "No records.")
  }

  @Test("a target with control characters cannot drive the terminal")
  func controlCharacters() {
    var summary = TransactionSummary()
    summary.add(
      .http(
        HTTPRecord(
          pid: 1, process: "p", startUnixNs: 1, durationMs: 2, connectionId: 1, scheme: .http, method: "GET",
          host: "evil\u{1B}[2Jhost", target: "/\u{1B}]0;title\u{7}", status: 200, ttfbMs: 1, requestBytes: 1,
          responseBytes: 1, reusedConnection: false)))
    let text =
      renderSummary(summary, width: 120, color: false)
      + renderWaterfall(summary.slowest.requests, width: 120, color: false)
    #expect(!text.contains("\u{1B}") && !text.contains("\u{7}"))
  }

  @Test("the waterfall: one line per request, bars of the same width, phases in proportion", arguments: [80, 140])
  func waterfall(width: Int) throws {
    let requests = TimedRequest.all(in: scenario.transactions)
    let lines = renderWaterfall(requests, width: width, color: false).split(separator: "\n").map(String.init)
    #expect(lines.count == requests.count + 3)
    #expect(lines[1] == "  d DNS  c connect  t TLS  w wait  r transfer")
    for line in lines { #expect(line.count <= width) }
    let bars = lines.dropFirst(3).map { line in String(line[line.firstIndex(of: "|")!...].dropFirst().dropLast()) }
    let barWidth = try #require(bars.first?.count)
    #expect(barWidth >= width / 3)
    #expect(bars.allSatisfy { $0.count == barWidth })

    let start = requests.map(\.startUnixNs).min()!
    let span = requests.map { Double($0.startUnixNs - start) / 1e6 + $0.phases.total }.max()!
    for (request, bar) in zip(requests, bars) {
      let plan = scenario.requests.first { $0.record == request.http }!
      // Each phase's boundaries round to the nearest column on their own: within one column.
      for (symbol, ms) in [
        ("d", plan.dns), ("c", plan.connect), ("t", plan.tls), ("w", plan.wait), ("r", plan.transfer),
      ] {
        let drawn = bar.filter { String($0) == symbol }.count
        let expected = ms / span * Double(barWidth)
        #expect(abs(Double(drawn) - expected) <= 1.01 || drawn == 1, "\(symbol) \(drawn) vs \(expected)")
      }
      let firstColumn = bar.firstIndex { $0 != " " }.map { bar.distance(from: bar.startIndex, to: $0) }
      let expectedStart = Double(plan.barStartUnixNs - start) / 1e6 / span * Double(barWidth)
      #expect(abs(Double(firstColumn ?? -9) - expectedStart) <= 1.01)
    }
  }

  @Test("the waterfall with color paints each phase and keeps the text")
  func waterfallColor() {
    let requests = TimedRequest.all(in: scenario.transactions)
    let plain = renderWaterfall(requests, width: 120, color: false)
    let colored = renderWaterfall(requests, width: 120, color: true)
    #expect(visible(colored) == plain)
    #expect(colored.contains("\u{1B}[32mw"))  // wait in green
    #expect(renderWaterfall([], width: 80, color: false) == "No HTTP requests.")
  }

  @Test("the live view: at most 12 lines that fit the width, busiest hosts first")
  func liveView() {
    var summary = TransactionSummary()
    for host in 0..<20 {
      for index in 0...host {
        summary.add(
          .http(
            HTTPRecord(
              pid: 1, process: "p", startUnixNs: UInt64(index), durationMs: Double(index + 1),
              connectionId: UInt64(host),
              scheme: .https, method: "GET", host: "service-\(host).example.com", target: "/",
              status: index == 0 ? 502 : 200,
              ttfbMs: 1, requestBytes: 1, responseBytes: 1, reusedConnection: index > 0)))
      }
    }
    for width in [50, 80, 200] {
      let lines = renderLiveView(summary, elapsedSeconds: 83, width: width)
      #expect(lines.count <= 12)
      #expect(lines.allSatisfy { $0.count <= width })
    }
    let lines = renderLiveView(summary, elapsedSeconds: 83, width: 200)
    #expect(lines[0].hasPrefix("elfhook 01:23  210 requests (2.5/s)  20 errors"))
    #expect(lines[2].contains("service-19.example.com:443") && lines[2].contains("20"))
    #expect(lines.suffix(2) == ["  … 12 more hosts", "  most failed: GET service-0.example.com:443/ 502 ×1"])
    #expect(renderLiveView(TransactionSummary(), elapsedSeconds: 1, width: 80).count == 2)
  }
}
