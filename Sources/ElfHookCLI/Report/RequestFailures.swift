import NetMonitor

/// The failed requests (``HTTPRecord/isFailure``: a 5xx, no response or one cut short, a gRPC
/// status but OK), grouped by endpoint and status, each group with the first failure's message:
/// what a reader of `4 errors` asks next. Failures are few beside the requests, so the summary
/// decodes each one even where it counts the others in their ring slots.
struct RequestFailures {
  struct Key: Hashable {
    /// The endpoint's row in the summary's endpoint table.
    var endpointRow: Int
    /// As the summary shows a status: `503`, `NOT_FOUND`, `-` for no response.
    var status: String
  }

  struct Group {
    var key: Key
    /// The first failure's: its gRPC message, else how its response ended, else empty.
    var message: String
    var count = 0
  }

  private(set) var groups: [Key: Group] = [:]

  mutating func add(_ http: HTTPRecord, endpointRow: Int) {
    let key = Key(endpointRow: endpointRow, status: Self.status(of: http))
    groups[key, default: Group(key: key, message: Self.message(of: http))].count += 1
  }

  /// The groups with the most failures first (then by endpoint and status, for a stable order).
  var commonest: [Group] {
    groups.values.sorted {
      ($0.count, $1.key.endpointRow, $1.key.status) > ($1.count, $0.key.endpointRow, $0.key.status)
    }
  }

  /// A gRPC call's status by name, else the HTTP status; `-` when no response came.
  static func status(of http: HTTPRecord) -> String {
    http.grpcStatus.map(GRPCCall.statusName) ?? http.status.map(String.init) ?? "-"
  }

  private static func message(of http: HTTPRecord) -> String {
    if let message = GRPCCall(http)?.message, !message.isEmpty { return message }
    if http.status == nil { return "no response" }
    return http.responseComplete == false ? "response cut short" : ""
  }
}
