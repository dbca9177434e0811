import NetMonitor

/// One HTTP request with its phase breakdown, ready to draw as a waterfall bar.
struct TimedRequest {
  var http: HTTPRecord
  /// The connection's setup, when this request opened the connection (`reused_connection` is
  /// false) and the connection's record has been seen; `nil` otherwise.
  private(set) var setup: ConnectionSetup?

  init(_ http: HTTPRecord, connection: ConnectionSetup?) {
    self.http = http
    join(connection)
  }

  /// Adds the connection's setup phases, which belong to the request that opened it only.
  mutating func join(_ connection: ConnectionSetup?) {
    setup = http.reusedConnection ? nil : connection
  }

  var phases: RequestPhases { RequestPhases(http, setup: setup) }

  /// When the bar starts, in nanoseconds since the Unix epoch: the record's start is the request's
  /// first byte, and the setup phases come before it. They are drawn back to back, ending there:
  /// the connection record says how long each took, not when each began.
  var startUnixNs: UInt64 {
    let setupNs = UInt64(max(phases.setup, 0) * 1_000_000)
    return http.startUnixNs > setupNs ? http.startUnixNs - setupNs : 0
  }

  /// Every HTTP request in `transactions` joined to its connection, in order of start.
  static func all(in transactions: [Transaction]) -> [TimedRequest] {
    var setups: [ConnectionKey: ConnectionSetup] = [:]
    for case .connection(let connection) in transactions {
      setups[ConnectionKey(connection)] = ConnectionSetup(connection)
    }
    let requests = transactions.compactMap { transaction -> TimedRequest? in
      guard case .http(let http) = transaction else { return nil }
      return TimedRequest(http, connection: setups[ConnectionKey(http)])
    }
    return requests.sorted { $0.startUnixNs < $1.startUnixNs }
  }
}
