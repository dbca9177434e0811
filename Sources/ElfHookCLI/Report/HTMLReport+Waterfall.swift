import NetMonitor

// The timing sections of the HTML report: the request waterfall, and the DNS lookups and
// connections without HTTP, drawn on the same time axis.

extension HTMLReport {
  static func waterfallSection(_ requests: [TimedRequest], _ axis: TimeAxis) -> String {
    guard !requests.isEmpty else {
      return section(id: "waterfall", title: "Waterfall", note: "no HTTP requests", body: nil)
    }
    let rows = requests.prefix(maximumRows).enumerated().map { index, request in
      requestRow(request, number: index + 1, axis)
    }
    let toolbar = """
      <div class="toolbar">
      <input id="filter" type="search" placeholder="Filter by method, status, host or path" aria-label="Filter requests">
      <label><input id="errors-only" type="checkbox"> Errors only</label>
      <span id="shown-count">\(Units.count(rows.count)) requests</span>
      <span class="legend">\(RequestPhase.allCases.map { "<span class=\"swatch \($0.cssClass)\"></span>\($0.name)" }.joined(separator: " "))</span>
      </div>
      """
    let table = """
      <table id="waterfall" class="waterfall" data-span-ms="\(decimal(axis.spanMs))" style="--tick:\(percent(axis.percent(axis.tickMs)))">
      <colgroup><col class="number"><col class="method"><col class="status"><col class="target"><col class="size"><col class="time"><col class="timeline"></colgroup>
      <thead><tr><th class="num sortable" data-sort="start" aria-sort="ascending">#</th><th>Method</th>\
      <th class="num sortable" data-sort="status">Status</th><th>Request</th><th class="num sortable" data-sort="size">Size</th>\
      <th class="num sortable" data-sort="duration">Time</th><th class="timeline">\(ticks(axis))</th></tr></thead>
      <tbody>
      \(rows.joined(separator: "\n"))
      </tbody>
      </table>
      """
    return section(
      id: "waterfall", title: "Waterfall",
      note: "one row per HTTP request on a shared time axis; hover a bar for its phases, click a heading to sort",
      body: toolbar + table + moreRows(requests.count - rows.count, "requests"))
  }

  static func otherRecordSection(_ records: [Transaction], _ axis: TimeAxis) -> String {
    let rows = records.prefix(maximumRows).map { otherRecordRow($0, axis) }
    let columns = ["Start", "Kind", "Process", "Name or peer", "Duration", "Result"]
    let heading = columns.map { "<th\($0 == "Start" || $0 == "Duration" ? " class=\"num\"" : "")>\($0)</th>" }.joined()
    let table = """
      <table id="other-records" class="waterfall others" style="--tick:\(percent(axis.percent(axis.tickMs)))">
      <colgroup><col class="time"><col class="kind"><col class="process"><col class="target"><col class="time"><col class="result"><col class="timeline"></colgroup>
      <thead><tr>\(heading)<th class="timeline">\(ticks(axis))</th></tr></thead>
      <tbody>
      \(rows.joined(separator: "\n"))
      </tbody>
      </table>
      """
    return section(
      id: "other-records", title: "DNS lookups and connections without HTTP",
      note:
        "every getaddrinfo call, and connections no HTTP request used (failed connects, databases, TLS the monitor could not read)",
      body: rows.isEmpty ? nil : table + moreRows(records.count - rows.count, "records"))
  }

  private static func requestRow(_ request: TimedRequest, number: Int, _ axis: TimeAxis) -> String {
    let http = request.http
    let address = RequestAddress(http)
    let phases = request.phases
    var start = axis.offsetMs(request.startUnixNs)
    var segments: [String] = []
    var tooltip = [
      "\(http.method) \(address.description)", "starts at +\(Units.duration(start))",
    ]
    for phase in RequestPhase.allCases where phases[phase] > 0 {
      segments.append(segment(phase.cssClass, from: start, ms: phases[phase], axis))
      tooltip.append("\(phase.name): \(Units.duration(phases[phase]))")
      start += phases[phase]
    }
    tooltip.append("total: \(Units.duration(phases.total))")
    if http.reusedConnection { tooltip.append("reused connection: no DNS, connect or TLS") }
    let status = http.grpcStatus.map(GRPCCall.statusName) ?? http.status.map(String.init) ?? "—"
    let statusClass = http.isFailure ? "status bad" : (http.status ?? 0) >= 400 ? "status warn" : "status"
    return """
      <tr class="request\(http.isFailure ? " failed" : "")" data-start="\(number)" data-status="\(http.status ?? 0)" \
      data-size="\(http.responseBytes)" data-duration="\(decimal(http.durationMs.isFinite ? http.durationMs : 0))">\
      <td class="num">\(number)</td><td class="method">\(htmlEscaped(http.method))</td>\
      <td class="num \(statusClass)">\(status)</td>\
      <td class="target" title="\(htmlEscaped(http.scheme.rawValue + "://" + address.description))">\
      <span class="host">\(htmlEscaped(address.host))</span>\(htmlEscaped(address.target))</td>\
      <td class="num" title="request \(Units.bytes(http.requestBytes)), response \(Units.bytes(http.responseBytes))">\(Units.bytes(http.responseBytes))</td>\
      <td class="num">\(Units.duration(http.durationMs))</td>\
      <td class="timeline"><div class="track" title="\(htmlEscaped(tooltip.joined(separator: "\n")))">\(segments.joined())</div></td></tr>
      """
  }

  private static func otherRecordRow(_ record: Transaction, _ axis: TimeAxis) -> String {
    let offset = axis.offsetMs(record.startUnixNs)
    let duration = record.durationMs.isFinite ? max(record.durationMs, 0) : 0
    let kind: String
    let name: String
    let result: String
    var error: RecordedError?
    var segments: [String] = []
    switch record {
    case .dns(let lookup):
      (kind, name, error) = ("DNS", lookup.host, lookup.error)
      result = lookup.addresses.isEmpty ? "no addresses" : lookup.addresses.joined(separator: ", ")
      segments.append(segment("dns", from: offset, ms: duration, axis))
    case .connection(let connection):
      kind = "\(connection.transport.rawValue) \(connection.role == .client ? "connect" : "accept")"
      name =
        HostKey(connection)?.description
        ?? [connection.peerAddress, connection.peerPort.map(String.init)]
        .compactMap { $0 }.joined(separator: ":")
      error = connection.error
      result = "sent \(Units.bytes(connection.bytesSent)), received \(Units.bytes(connection.bytesReceived))"
      // The handshakes, then the connection's open life, within its duration.
      let connect = min(connection.connectMs ?? 0, duration)
      let tls = min(connection.tlsMs ?? 0, duration - connect)
      if connect > 0 { segments.append(segment("connect", from: offset, ms: connect, axis)) }
      if tls > 0 { segments.append(segment("tls", from: offset + connect, ms: tls, axis)) }
      if duration - connect - tls > 0 {
        segments.append(segment("open", from: offset + connect + tls, ms: duration - connect - tls, axis))
      }
    case .http:
      return ""
    }
    let resultCell =
      error.map { "<span class=\"bad\">\(htmlEscaped("\($0.call): \($0.code)"))</span> \(htmlEscaped($0.message))" }
      ?? htmlEscaped(result)
    let resultTitle = error.map { "\($0.call): \($0.code) \($0.message)" } ?? result
    let tooltip = "\(kind) \(name)\nstarts at +\(Units.duration(offset))\nduration: \(Units.duration(duration))"
    return """
      <tr class="record \(record.kind.rawValue)\(error == nil ? "" : " failed")">\
      <td class="num">\(offset < 0.0005 ? "0" : "+" + Units.duration(offset))</td><td>\(htmlEscaped(kind))</td>\
      <td>\(htmlEscaped("\(record.process) (\(record.pid))"))</td><td class="target">\(htmlEscaped(name))</td>\
      <td class="num">\(Units.duration(record.durationMs))</td><td class="result" title="\(htmlEscaped(resultTitle))">\(resultCell)</td>\
      <td class="timeline"><div class="track" title="\(htmlEscaped(tooltip))">\(segments.joined())</div></td></tr>
      """
  }

  /// One colored bar segment, placed in percent of the axis; `data-ms` keeps its length.
  private static func segment(_ cssClass: String, from startMs: Double, ms: Double, _ axis: TimeAxis) -> String {
    "<span class=\"phase \(cssClass)\" data-ms=\"\(decimal(ms))\" "
      + "style=\"left:\(percent(axis.percent(startMs)));width:\(percent(axis.percent(ms)))\"></span>"
  }

  /// Tick labels over the timeline column; labels near the right edge are left out, where they
  /// would overflow.
  private static func ticks(_ axis: TimeAxis) -> String {
    let labels = stride(from: 0.0, to: axis.spanMs, by: axis.tickMs).filter { axis.percent($0) <= 90 }.map { ms in
      "<span class=\"tick\" style=\"left:\(percent(axis.percent(ms)))\">\(tickLabel(ms))</span>"
    }
    return "<div class=\"axis\">\(labels.joined())</div>"
  }

  /// A round tick value without the zeros a table keeps for alignment: `10 ms`, `1.5 s`, `0`.
  private static func tickLabel(_ ms: Double) -> String {
    guard ms > 0 else { return "0" }
    let text = Units.duration(ms)
    guard let space = text.firstIndex(of: " "), text[..<space].contains(".") else { return text }
    var number = text[..<space]
    while number.hasSuffix("0") { number.removeLast() }
    if number.hasSuffix(".") { number.removeLast() }
    return String(number + text[space...])
  }

  private static func percent(_ value: Double) -> String {
    Units.decimal(value, digits: 4) + "%"
  }

  private static func decimal(_ value: Double) -> String {
    Units.decimal(value, digits: 3)
  }
}
