// The summary tables of the HTML report: the same groups `renderSummary` prints, without the
// terminal's row limits (up to `maximumRows`).

extension HTMLReport {
  static func hostSection(_ summary: TransactionSummary) -> String {
    let hosts = summary.busiestHosts
    let rows = hosts.prefix(maximumRows).map { host, stats in
      [
        "<span class=\"name\">\(htmlEscaped(host.description))</span>", Units.count(stats.connections),
        Units.count(stats.http.requests), errorCount(stats.errors),
      ] + quantileCells(stats.http.durations) + [Units.bytes(stats.bytesSent), Units.bytes(stats.bytesReceived)]
    }
    let columns = ["Host", "Connections", "Requests", "Errors", "p50", "p95", "Max", "Sent", "Received"]
    return section(
      id: "hosts", title: "Hosts",
      note:
        "per server address and port; bytes are HTTP requests and responses, plus the socket bytes of connections without HTTP",
      body: rows.isEmpty
        ? nil
        : table(id: "hosts", columns: columns, numeric: Set(columns.dropFirst()), rows: rows)
          + moreRows(hosts.count - rows.count, "hosts"))
  }

  static func endpointSection(_ summary: TransactionSummary) -> String {
    let endpoints = summary.busiestEndpoints
    let rows = endpoints.prefix(maximumRows).map { endpoint, stats in
      [
        htmlEscaped(endpoint.method),
        "<span class=\"host\">\(htmlEscaped(endpoint.host.description))</span>\(htmlEscaped(endpoint.path))",
        Units.count(stats.requests), errorCount(stats.errors),
      ] + quantileCells(stats.durations) + [Units.bytes(stats.bytesReceived)]
    }
    let columns = ["Method", "Endpoint", "Requests", "Errors", "p50", "p95", "Max", "Received"]
    return section(
      id: "endpoints", title: "Endpoints", note: "method, host and path without the query string",
      body: rows.isEmpty
        ? nil
        : table(id: "endpoints", columns: columns, numeric: Set(columns.dropFirst(2)), rows: rows)
          + moreRows(endpoints.count - rows.count, "endpoints"))
  }

  static func dnsSection(_ summary: TransactionSummary) -> String {
    let names = summary.busiestNames
    let rows = names.prefix(maximumRows).map { name, stats in
      let quantiles = stats.durations.quantiles
      return [
        "<span class=\"name\">\(htmlEscaped(name))</span>", Units.count(stats.lookups), errorCount(stats.failures),
        quantiles.map { Units.duration($0.p50) } ?? "-", quantiles.map { Units.duration($0.maximum) } ?? "-",
      ]
    }
    let columns = ["Name", "Lookups", "Failed", "p50", "Max"]
    return section(
      id: "dns", title: "DNS lookups", note: "getaddrinfo calls per name",
      body: rows.isEmpty
        ? nil
        : table(id: "dns", columns: columns, numeric: Set(columns.dropFirst()), rows: rows)
          + moreRows(names.count - rows.count, "names"))
  }

  static func requestFailureSection(_ summary: TransactionSummary) -> String {
    let groups = summary.requestFailures.commonest
    let rows = groups.prefix(maximumRows).map { group in
      let endpoint = summary.endpoint(at: group.key.endpointRow)
      return [
        htmlEscaped(endpoint.method),
        "<span class=\"host\">\(htmlEscaped(endpoint.host.description))</span>\(htmlEscaped(endpoint.path))",
        "<span class=\"bad\">\(htmlEscaped(group.key.statusText))</span>", Units.count(group.count),
        htmlEscaped(group.message.isEmpty ? "-" : group.message),
      ]
    }
    let columns = ["Method", "Endpoint", "Status", "Count", "Message"]
    return section(
      id: "request-failures", title: "Failed requests",
      note: "HTTP 5xx, no response or one cut short, gRPC statuses but OK; by endpoint and status, with the first message",
      body: rows.isEmpty
        ? nil
        : table(id: "request-failures", columns: columns, numeric: ["Count"], rows: rows)
          + moreRows(groups.count - rows.count, "kinds of failure"))
  }

  static func failureSection(_ summary: TransactionSummary) -> String {
    let rows = summary.commonestFailures.map { failure in
      [
        htmlEscaped(failure.key.call), "<span class=\"bad\">\(htmlEscaped(failure.key.code))</span>",
        Units.count(failure.count), htmlEscaped(failure.firstTarget), htmlEscaped(failure.message),
      ]
    }
    let columns = ["Call", "Code", "Count", "First on", "Message"]
    return section(
      id: "failures", title: "Failed calls", note: "DNS lookups and connections that failed, by call and code",
      body: rows.isEmpty ? nil : table(id: "failures", columns: columns, numeric: ["Count"], rows: rows))
  }

  private static func quantileCells(_ durations: DurationSamples) -> [String] {
    guard let quantiles = durations.quantiles else { return ["-", "-", "-"] }
    return [quantiles.p50, quantiles.p95, quantiles.maximum].map(Units.duration)
  }

  private static func errorCount(_ count: Int) -> String {
    count > 0 ? "<span class=\"bad\">\(Units.count(count))</span>" : "0"
  }
}
