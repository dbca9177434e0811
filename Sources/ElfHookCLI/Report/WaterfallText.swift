/// One line per HTTP request, in the order given, with a text bar of its phases (DNS, connect,
/// TLS, wait, transfer; one character each, see the legend) on a time axis that all the lines share
/// and that fills what `width` leaves after the labels.
///
/// - Parameters:
///   - requests: The requests to draw, usually `TimedRequest.all(in:)` or the slowest of a summary.
///   - width: The terminal's width in columns.
///   - color: Whether to color the phases with ANSI colors.
func renderWaterfall(_ requests: [TimedRequest], width: Int, color: Bool) -> String {
  let style = TerminalStyle(color: color)
  guard !requests.isEmpty else { return "No HTTP requests." }
  let axis = TimeAxis(requests.map { ($0.startUnixNs, $0.phases.total) })
  let offsets = requests.map { axis.offsetMs($0.startUnixNs) }

  let methods = requests.map { printable(String($0.http.method.prefix(7))) }
  let labels = requests.map { printable(RequestAddress($0.http).description) }
  let durations = requests.map { Units.duration($0.http.durationMs) }
  let methodWidth = methods.map(\.count).max() ?? 0
  let durationWidth = durations.map(\.count).max() ?? 0
  // indent, method, status and duration, the spaces between them, and the bar's two borders
  let available = width - (2 + methodWidth + 1 + 3 + 1 + 1 + durationWidth + 1 + 2)
  let labelWidth = min(labels.map(\.count).max() ?? 0, max(12, available * 2 / 5))
  let barWidth = max(10, available - labelWidth)

  let span = Units.duration(axis.spanMs)
  let count = requests.count == 1 ? "1 request" : "\(Units.count(requests.count)) requests"
  var lines = [style.paint("WATERFALL", .bold) + "  \(count) over \(span)", "  " + RequestPhase.legend(style)]
  let lead = String(repeating: " ", count: 2 + methodWidth + 1 + 3 + 1 + labelWidth + 1 + durationWidth + 1)
  lines.append(lead + style.paint(" 0" + pad("", barWidth - 1 - span.count) + span, .dim))
  for (index, request) in requests.enumerated() {
    let label = labels[index].count > labelWidth ? String(labels[index].prefix(labelWidth - 1)) + "…" : labels[index]
    let status = statusCell(request.http)
    let bar = waterfallBar(request.phases, offsetMs: offsets[index], spanMs: axis.spanMs, width: barWidth, style)
    lines.append(
      "  " + pad(methods[index], methodWidth) + " " + style.paint(pad(status.text, 3, right: true), status.style)
        + " " + pad(label, labelWidth) + " " + pad(durations[index], durationWidth, right: true) + " |" + bar + "|")
  }
  return lines.joined(separator: "\n")
}

/// `width` columns with each phase drawn from its start to its end on the shared axis. Each
/// boundary is rounded to a column on its own, so the whole bar keeps its true length and a phase
/// shorter than half a column may vanish; a request that would vanish entirely keeps one column
/// of its longest phase, so that no request is invisible.
private func waterfallBar(
  _ phases: RequestPhases, offsetMs: Double, spanMs: Double, width: Int, _ style: TerminalStyle
) -> String {
  func column(_ ms: Double) -> Int { min(max(Int((ms / spanMs * Double(width)).rounded()), 0), width) }
  var cells: [RequestPhase?] = Array(repeating: nil, count: width)
  var start = offsetMs
  for phase in RequestPhase.allCases {
    let end = start + phases[phase]
    for cell in column(start)..<max(column(start), column(end)) { cells[cell] = phase }
    start = end
  }
  if !cells.contains(where: { $0 != nil }), let longest = RequestPhase.allCases.max(by: { phases[$0] < phases[$1] }) {
    cells[min(column(offsetMs), width - 1)] = longest
  }
  // One escape sequence per run of a phase, not per character.
  var bar = ""
  var index = 0
  while index < cells.count {
    var next = index + 1
    while next < cells.count && cells[next] == cells[index] { next += 1 }
    bar += paintRun(cells[index], length: next - index, style)
    index = next
  }
  return bar
}

private func paintRun(_ phase: RequestPhase?, length: Int, _ style: TerminalStyle) -> String {
  guard let phase else { return String(repeating: " ", count: length) }
  return style.paint(String(repeating: phase.symbol, count: length), phase.terminalColor)
}

private func pad(_ text: String, _ width: Int, right: Bool = false) -> String {
  let padding = String(repeating: " ", count: max(width - text.count, 0))
  return right ? padding + text : text + padding
}
