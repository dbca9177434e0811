import NetMonitor

/// The failed requests (``HTTPRecord/isFailure``: a 5xx, no response or one cut short, a gRPC
/// status but OK), grouped by endpoint and status, each group with the first failure's message:
/// what a reader of `4 errors` asks next. A group is keyed by numbers a ring slot holds, so that a
/// failure counted in its slot is decoded only when it is its group's first (for the message).
struct RequestFailures {
  struct Key: Hashable {
    /// The endpoint's row in the summary's endpoint table.
    var endpointRow: Int
    var status: Int?
    var grpcStatus: Int?

    /// As the summary shows a status (``HTTPRecord/statusText``).
    var statusText: String { HTTPRecord.statusText(status: status, grpcStatus: grpcStatus) }
  }

  struct Group {
    var key: Key
    /// The first failure's: its gRPC message, else how its response ended, else empty.
    var message: String
    var count = 0
  }

  private(set) var groups: [Key: Group] = [:]

  mutating func add(_ http: HTTPRecord, endpointRow: Int) {
    let key = Key(endpointRow: endpointRow, status: http.status, grpcStatus: http.grpcStatus)
    groups[key, default: Group(key: key, message: Self.message(of: http))].count += 1
  }

  /// Counts the failure in a ring slot when its group has one already; false when it would be the
  /// group's first, which ``add(_:endpointRow:)`` must count from the decoded record.
  mutating func countIfKnown(_ http: HTTPRecordView, endpointRow: Int) -> Bool {
    let key = Key(endpointRow: endpointRow, status: http.status, grpcStatus: http.grpcStatus)
    guard groups[key] != nil else { return false }
    groups[key]!.count += 1
    return true
  }

  /// The groups with the most failures first (then by endpoint and status, for a stable order).
  var commonest: [Group] {
    groups.values.sorted {
      ($0.count, $1.key.endpointRow, $1.key.statusText) > ($1.count, $0.key.endpointRow, $0.key.statusText)
    }
  }

  private static func message(of http: HTTPRecord) -> String {
    if let message = GRPCCall(http)?.message, !message.isEmpty { return message }
    if http.status == nil { return "no response" }
    return http.responseComplete == false ? "response cut short" : ""
  }
}
