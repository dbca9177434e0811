// The order in which every view lists a summary's groups: most traffic first, ties by name, so
// the terminal, the live view and the HTML page agree and their output is deterministic.

extension TransactionSummary {
  /// Hosts with the most requests first, then the most connections.
  var busiestHosts: [(key: HostKey, value: HostStats)] {
    hosts.sorted {
      ($0.value.http.requests, $0.value.connections, $1.key) > ($1.value.http.requests, $1.value.connections, $0.key)
    }
  }

  /// Endpoints with the most requests first.
  var busiestEndpoints: [(key: EndpointKey, value: RequestStats)] {
    endpoints.sorted { ($0.value.requests, $1.key.description) > ($1.value.requests, $0.key.description) }
  }

  /// Names with the most lookups first.
  var busiestNames: [(key: String, value: DNSStats)] {
    dnsByName.sorted { ($0.value.lookups, $1.key) > ($1.value.lookups, $0.key) }
  }

  /// Failure groups with the most failures first.
  var commonestFailures: [FailureGroup] {
    failures.values.sorted { ($0.count, $1.key.call, $1.key.code) > ($1.count, $0.key.call, $0.key.code) }
  }
}
