import NetMonitor

/// The slowest HTTP requests seen so far, at most `capacity`, each joined to its connection's
/// setup phases.
///
/// The join works in either order. A connection's record is written when it closes, after the
/// records of its requests: a kept request waits for it, and `add(_: ConnectionRecord)` fills it
/// in. When records come sorted by start instead (files merged after the fact), the connection
/// comes first, and `recentConnections` remembers it for its requests.
struct SlowestRequests {
  let capacity: Int
  /// Slowest first.
  private(set) var requests: [TimedRequest] = []
  private var recentConnections = RecentConnections(capacity: 4096)
  /// The duration of the fastest request kept (the last one), read at every request: most are
  /// not among the slowest, and this says so without touching the kept records.
  private var fastestKeptMs = 0.0

  init(capacity: Int) {
    self.capacity = capacity
  }

  /// Whether a request that took `durationMs` would be kept by ``add(_:)-(HTTPRecord)``: one that
  /// would not is left out of the list whatever else it holds, so a caller need not make its
  /// ``HTTPRecord`` at all.
  func keeps(durationMs: Double) -> Bool {
    // Most requests are not among the slowest: one comparison and out.
    capacity > 0 && durationMs.isFinite && (requests.count < capacity || durationMs > fastestKeptMs)
  }

  mutating func add(_ http: HTTPRecord) {
    guard keeps(durationMs: http.durationMs) else { return }
    let request = TimedRequest(http, connection: recentConnections[ConnectionKey(http)])
    let index = requests.firstIndex { $0.http.durationMs < http.durationMs } ?? requests.endIndex
    requests.insert(request, at: index)
    if requests.count > capacity { requests.removeLast() }
    fastestKeptMs = requests[requests.count - 1].http.durationMs
  }

  mutating func add(_ connection: ConnectionRecord) {
    let key = ConnectionKey(connection)
    let setup = ConnectionSetup(connection)
    for index in requests.indices where ConnectionKey(requests[index].http) == key {
      requests[index].join(setup)
    }
    recentConnections.insert(setup, for: key)
  }
}

/// The setups of the last `capacity` connections seen: bounded, so a long run does not keep one
/// entry per connection it ever made.
private struct RecentConnections {
  private var setups: [ConnectionKey: ConnectionSetup] = [:]
  /// A ring of the keys in `setups`, oldest at `next` once full.
  private var order: [ConnectionKey] = []
  private var next = 0
  private let capacity: Int

  init(capacity: Int) {
    self.capacity = capacity
  }

  subscript(key: ConnectionKey) -> ConnectionSetup? { setups[key] }

  mutating func insert(_ setup: ConnectionSetup, for key: ConnectionKey) {
    if setups.updateValue(setup, forKey: key) != nil { return }
    if order.count < capacity {
      order.append(key)
    } else {
      setups[order[next]] = nil
      order[next] = key
      next = (next + 1) % capacity
    }
  }
}
