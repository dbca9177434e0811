import Foundation
import NetMonitor
import Testing
import TestSupport

@testable import ElfHookCLI

/// The HTML report: escaping of record text, and the page as headless Chromium renders it.
@Suite("HTML report", .serialized)
struct HTMLReportTests {
  let scenario = ReportScenario()

  /// Records whose text tries to break out of the page.
  static let hostile: [Transaction] = [
    .http(
      HTTPRecord(
        pid: 66, process: "<b>proc</b>", startUnixNs: 1_767_225_600_000_000_000, durationMs: 40,
        connectionId: 1, scheme: .http, method: "GET", host: "x\"><img src=x onerror=\"document.title='pwned'\">",
        target: "/<script>alert(1)</script>", status: 200, ttfbMs: 30, requestBytes: 10, responseBytes: 20,
        reusedConnection: false)),
    .dns(
      DNSRecord(
        pid: 66, process: "<b>proc</b>", startUnixNs: 1_767_225_600_001_000_000, durationMs: 3,
        host: "<i>name</i>'", addresses: ["<svg onload=alert(3)>"])),
    .connection(
      ConnectionRecord(
        pid: 66, process: "<b>proc</b>", startUnixNs: 1_767_225_600_002_000_000, durationMs: 1,
        id: 9, role: .client, transport: .tcp, host: "</td></tr></table><h1>broken</h1>", peerAddress: "127.0.0.1",
        peerPort: 9, connectMs: 1, bytesSent: 0, bytesReceived: 0, httpExchanges: 0,
        error: RecordedError(call: "connect", code: "<ECONNREFUSED>", message: "<script>alert(4)</script>"))),
  ]

  @Test("text from records is escaped: a target like /<script>alert(1)</script> stays text")
  func escaping() {
    let html = HTMLReport.render(Self.hostile, title: "<title>report</title>")
    #expect(html.contains("/&lt;script&gt;alert(1)&lt;/script&gt;"))
    #expect(!html.contains("<script>alert"))
    #expect(!html.contains("<img") && !html.contains("<svg") && !html.contains("<b>") && !html.contains("<i>"))
    #expect(!html.contains("<h1>broken"))
    #expect(html.contains("<title>&lt;title&gt;report&lt;/title&gt;</title>"))
    #expect(html.components(separatedBy: "<script").count == 2)  // the page's own script only
    #expect(htmlEscaped("a&b<c>\"d\"'e'\u{1}") == "a&amp;b&lt;c&gt;&quot;d&quot;&#39;e&#39;\u{FFFD}")
  }

  @Test("failed requests have their table, by endpoint and status, the message escaped")
  func failedRequests() {
    var call = HTTPRecord(
      pid: 7, process: "client", startUnixNs: 1_767_225_600_000_000_000, durationMs: 2, connectionId: 1, scheme: .http,
      method: "POST", host: "svc:50051", target: "/shop.Cart/Add", status: 200, ttfbMs: 1, requestBytes: 10,
      responseBytes: 20, reusedConnection: false)
    call.grpcStatus = 5
    call.grpcMessage = "no <b>cart</b>"
    let page = HTMLReport.render([.http(call), .http(call)], title: "grpc")
    #expect(page.contains(##"<a href="#request-failures-section">Failed requests</a>"##))
    #expect(page.contains(#"<span class="bad">NOT_FOUND</span></td><td class="num">2</td><td>no &lt;b&gt;cart&lt;/b&gt;</td>"#), "\(page)")
    call.grpcStatus = 0
    let fine = HTMLReport.render([.http(call)], title: "grpc")
    #expect(fine.contains(#"<section id="request-failures-section">"#) && !fine.contains("NOT_FOUND"))
  }

  @Test("connections whose TLS or HTTP elfhook cannot read have cards, as the terminal summary has lines")
  func undecodedTLSCard() {
    func connection(_ id: UInt64, tlsBytes: UInt64?) -> Transaction {
      .connection(
        ConnectionRecord(
          pid: 7, process: "wget", startUnixNs: 1_767_225_600_000_000_000 + id, durationMs: 12, id: id, role: .client,
          transport: .tcp, host: "example.test", peerAddress: "127.0.0.1", peerPort: 8443, connectMs: 1,
          tlsVersion: "TLSv1.3", bytesSent: 500, bytesReceived: 4000, tlsBytesSent: tlsBytes,
          tlsBytesReceived: tlsBytes, httpExchanges: tlsBytes == nil ? 0 : 1))
    }
    let card = #"<div class="label">TLS not read</div><div class="value">2</div>"#
    let undecoded = HTMLReport.render([connection(1, tlsBytes: nil), connection(2, tlsBytes: nil)], title: "tls")
    #expect(undecoded.contains(card))
    #expect(undecoded.contains("a library, or a way into one, elfhook does not hook (Java, rustls, a stripped static OpenSSL, OpenSSL&#39;s SSL BIO…): their HTTP is not seen"))
    let decoded = HTMLReport.render([connection(1, tlsBytes: 100), connection(2, tlsBytes: 100)], title: "tls")
    #expect(!decoded.contains("TLS not read"))
    #expect(!decoded.contains("HTTP read part way"))
    guard case .connection(var http2) = connection(3, tlsBytes: 100) else { return }
    http2.tlsALPN = "h2"
    http2.httpError = "HTTP/2: bad HPACK index"
    let page = HTMLReport.render([.connection(http2), connection(4, tlsBytes: 100)], title: "tls")
    #expect(page.contains(#"<div class="label">HTTP read part way</div><div class="value">1</div>"#))
    #expect(page.contains("HTTP/2: bad HPACK index"))
  }

  @Test(
    "in Chromium: hostile text stays text, every request and record has its row, the script ran",
    .enabled(if: Chromium.path != nil, Chromium.missing))
  func hostileInBrowser() throws {
    let directory = try TemporaryDirectory("html-hostile")
    defer { directory.remove() }
    let page = try directory.write(HTMLReport.render(Self.hostile, title: "hostile"), to: "hostile.html")
    let dom = try Chromium.dumpDOM(page, in: directory)
    #expect(dom.contains("<title>hostile</title>"))
    #expect(dom.components(separatedBy: "<script").count == 2)
    #expect(!dom.contains("<img") && !dom.contains("<svg") && !dom.contains("<h1>broken"))
    #expect(dom.contains("/&lt;script&gt;alert(1)&lt;/script&gt;"))
    #expect(dom.components(separatedBy: "<tr class=\"request").count - 1 == 1)
    #expect(dom.components(separatedBy: "<tr class=\"record dns").count - 1 == 1)
    #expect(dom.components(separatedBy: "<tr class=\"record connection failed").count - 1 == 1)
    #expect(dom.contains("<span id=\"shown-count\">1 of 1 requests</span>"))
  }

  @Test(
    "in Chromium: one row per request, segments placed and sized in proportion to the phase times",
    .enabled(if: Chromium.path != nil, Chromium.missing))
  func waterfallGeometry() throws {
    let directory = try TemporaryDirectory("html-geometry")
    defer { directory.remove() }
    // Measures every segment as laid out: its left edge and width within its track, in pixels.
    let measure = """
      <script>
      for (const track of document.querySelectorAll("tr.request .track")) {
        const box = track.getBoundingClientRect();
        for (const phase of track.querySelectorAll(".phase")) {
          const r = phase.getBoundingClientRect();
          phase.dataset.measured = [r.left - box.left, r.width, box.width].join(",");
        }
      }
      </script>
      """
    let html = HTMLReport.render(scenario.transactions, title: "geometry")
      .replacingOccurrences(of: "</body>", with: measure + "</body>")
    let dom = try Chromium.dumpDOM(try directory.write(html, to: "geometry.html"), in: directory)

    let rows = dom.components(separatedBy: "<tr class=\"request").dropFirst().map {
      $0.components(separatedBy: "</tr>")[0]
    }
    #expect(rows.count == scenario.requests.count)
    #expect(dom.contains("<span id=\"shown-count\">23 of 23 requests</span>"))
    #expect(dom.components(separatedBy: "<tr class=\"record dns").count - 1 == 5)
    #expect(dom.components(separatedBy: "<tr class=\"record connection").count - 1 == 3)  // 2 refused, 1 database

    // The axis, from the scenario's own numbers: the earliest bar or record to the latest end.
    let others = HTMLReport.recordsWithoutHTTP(scenario.transactions)
    let axisStart = (scenario.requests.map(\.barStartUnixNs) + others.map(\.startUnixNs)).min()!
    let ends =
      scenario.requests.map { Double($0.barStartUnixNs - axisStart) / 1e6 + $0.setup + $0.wait + $0.transfer }
      + others.map { Double($0.startUnixNs - axisStart) / 1e6 + $0.durationMs }
    let span = ends.max()!

    let segment = try Regex(
      #"<span class="phase (\w+)" data-ms="([0-9.]+)" style="[^"]*" data-measured="([0-9.e-]+),([0-9.e-]+),([0-9.e-]+)">"#
    )
    let plans = scenario.requests.sorted { $0.barStartUnixNs < $1.barStartUnixNs }
    var checked = 0
    for (row, plan) in zip(rows, plans) {
      let expected = [
        ("dns", plan.dns), ("connect", plan.connect), ("tls", plan.tls), ("wait", plan.wait),
        ("transfer", plan.transfer),
      ]
      .filter { $0.1 > 0 }
      let matches = row.matches(of: segment)
      #expect(matches.map { String($0.output[1].substring!) } == expected.map(\.0), "\(row)")
      var startMs = Double(plan.barStartUnixNs - axisStart) / 1e6
      for (match, (_, ms)) in zip(matches, expected) {
        let left = Double(match.output[3].substring!)!
        let width = Double(match.output[4].substring!)!
        let track = Double(match.output[5].substring!)!
        #expect(track > 300)
        #expect(abs(Double(match.output[2].substring!)! - ms) < 0.001)
        // Within a pixel and a half (layout rounds to device pixels; a segment is at least 1 px).
        #expect(abs(left - startMs / span * track) <= 1.5, "left \(left) vs \(startMs / span * track)")
        #expect(abs(width - max(ms / span * track, 1)) <= 1.5, "width \(width) vs \(ms / span * track)")
        startMs += ms
        checked += 1
      }
    }
    #expect(checked >= 2 * scenario.requests.count)
  }

  @Test("in Chromium: a screenshot of the page is a real picture", .enabled(if: Chromium.path != nil, Chromium.missing))
  func screenshot() throws {
    let directory = try TemporaryDirectory("html-screenshot")
    defer { directory.remove() }
    let page = try directory.write(
      HTMLReport.render(scenario.transactions, title: "elfhook report: scenario"), to: "report.html")
    // Kept after the test, for a person to look at.
    let png = FileManager.default.temporaryDirectory.appendingPathComponent("elfhook-report-screenshot.png").path
    try? FileManager.default.removeItem(atPath: png)
    try Chromium.screenshot(page, to: png, in: directory)
    let data = try Data(contentsOf: URL(fileURLWithPath: png))
    #expect(data.starts(with: [0x89, 0x50, 0x4E, 0x47]))
    // A blank 1400×900 page compresses to a few KB; tables, text and colored bars do not.
    #expect(data.count > 60_000, "\(data.count) bytes")
  }
}
