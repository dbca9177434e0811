import NetMonitor

/// What `elfhook` reports about a stream of records, built one record at a time: per-host and
/// per-endpoint request tables, DNS lookups, connections and their failures, and the slowest
/// requests with their phase breakdown.
///
/// `elfhook run` feeds it records as a long-running server produces them, so it keeps little per
/// record: a `Float` duration in the totals, its host and its endpoint, and a bounded set of the
/// slowest requests. Records may come in any order; a connection's record usually comes after its
/// requests' (it is written at close).
struct TransactionSummary {
  /// Records the monitor could not deliver. The caller sets it from the record stream's own
  /// count; the summary shows it, because tables built from an incomplete stream undercount.
  var droppedRecords: UInt64 = 0
  /// Why they were dropped, when the record stream knows a cause other than being full.
  var dropReason: String?

  /// Every HTTP request.
  private(set) var requests = RequestStats()
  var hosts: [HostKey: HostStats] { hostStats.dictionary }
  /// At most `maximumEndpoints` keys; later paths share one `otherPaths` row per method and host.
  var endpoints: [EndpointKey: RequestStats] { endpointStats.dictionary }
  private var hostStats = KeyedStats<HostKey, HostStats>()
  private var endpointStats = KeyedStats<EndpointKey, RequestStats>()
  /// The `Host` header and scheme of the last http record, and the key made of them.
  private var lastHost: (header: String?, scheme: HTTPScheme, key: HostKey)?
  /// The last http record's request and the rows it was counted in: the next one mostly repeats it.
  private var lastRequest: RepeatedRequest?
  /// The rows of the endpoints counted so far, by the bytes that decide them: a request that is
  /// no repeat but goes to a known endpoint is counted from its slot too.
  private var routes = RouteRows()
  /// Repeats of `lastRequest` counted from their slots, not yet in its rows (only while
  /// ``add(slotsFrom:)`` runs).
  private var repeats = PendingRepeats()
  /// Every `getaddrinfo` call.
  private(set) var dns = DNSStats()
  /// The calls for each name, lowercased.
  private(set) var dnsByName: [String: DNSStats] = [:]
  /// Connections the process opened (`role: client`).
  private(set) var connectionsOpened = 0
  /// Connections the process accepted (`role: server`).
  private(set) var connectionsAccepted = 0
  private(set) var failedConnections = 0
  /// Connections whose TLS no hooked library decoded (their version read on the wire: GnuTLS,
  /// Node's or Java's own TLS, BoringSSL linked in): bytes and timings, no HTTP.
  private(set) var undecodedTLSConnections = 0
  /// Connections on which elfhook stopped reading HTTP part way (`http_error`), and the first
  /// reason given.
  private(set) var unreadHTTPConnections = 0
  private(set) var firstHTTPError: String?
  /// DNS and connection failures, grouped by call and code.
  private(set) var failures: [FailureGroup.Key: FailureGroup] = [:]
  /// Failed requests, grouped by endpoint and status.
  private(set) var requestFailures = RequestFailures()
  private(set) var slowest: SlowestRequests
  private(set) var records = 0
  /// The http records counted from their ring slot's numbers, not decoded (``add(slotsFrom:)``).
  private(set) var recordsCountedInPlace = 0
  /// From the earliest start to the latest end of the records, in nanoseconds since the Unix
  /// epoch; `nil` before the first record.
  var span: ClosedRange<UInt64>? { spanStart <= spanEnd ? spanStart...spanEnd : nil }
  /// Kept as two numbers, a record's end never before its start: `UInt64.max` and 0 (no span)
  /// until the first record. An optional range was rebuilt at every record.
  private var spanStart = UInt64.max
  private var spanEnd: UInt64 = 0

  /// Enough for every endpoint of a real API; paths that embed ids (`/users/1234`) would grow the
  /// table without bound.
  static let maximumEndpoints = 2000
  static let otherPaths = "/… (other paths)"

  /// - Parameter slowestCapacity: How many of the slowest requests to keep.
  init(slowestCapacity: Int = 10) {
    slowest = SlowestRequests(capacity: slowestCapacity)
  }

  /// Failed HTTP requests (5xx or no response), failed connections and failed DNS lookups.
  var errors: Int { requests.errors + failedConnections + dns.failures }

  /// Borrowed, and switched over in place: a copy of the record (its strings retained and released)
  /// cost more than counting it, at every record of a busy server.
  mutating func add(_ transaction: borrowing Transaction) {
    addPendingRepeats()
    records += 1
    switch transaction {
    case .http(let http):
      extendSpan(start: http.startUnixNs, durationMs: http.durationMs)
      add(http)
    case .connection(let connection):
      extendSpan(start: connection.startUnixNs, durationMs: connection.durationMs)
      add(connection)
    case .dns(let lookup):
      extendSpan(start: lookup.startUnixNs, durationMs: lookup.durationMs)
      add(lookup)
    }
  }

  /// Adds every record `drain` hands over in its ring slot (`RecordRing.drainSlots`); returns what
  /// `drain` returns. The summary ends up the same as with ``add(_:)`` of each record decoded, for
  /// less. An http record that is not among the slowest is counted from its numbers, never
  /// decoded, when its host and endpoint rows are known from its bytes:
  /// - it repeats the last one's request (the very bytes it was read from) — most records of a
  ///   server answering the same request over and over; its durations and totals are added to
  ///   its three groups a batch at a time (``PendingRepeats``);
  /// - or a request to the same route (scheme, method, `Host`, target before its query) was
  ///   counted before (``RouteRows``) — most records of real traffic, whose queries, sizes and
  ///   statuses differ from one request to the next.
  /// Everything else the summary reads of such a request is its rows or not needed (the whole
  /// record, for the slowest). Other records are decoded and added.
  mutating func add(slotsFrom drain: ((RecordSlot) -> Void) -> Int) -> Int {
    let count = drain { add($0) }
    addPendingRepeats()
    return count
  }

  private mutating func add(_ slot: RecordSlot) {
    guard let http = slot.http else {
      slot.withTransaction { add($0) }
      return
    }
    if !slowest.keeps(durationMs: http.durationMs) {
      if lastRequest?.repeats(http) == true {
        countInPlace(http)
        let failed = http.isFailure
        repeats.add(http, failed: failed)
        if failed, let row = lastRequest?.endpointRow { addFailure(of: slot, endpointRow: row) }
        if repeats.isFull { addPendingRepeats() }
        return
      }
      if let rows = routes.rows(of: http) {
        countInPlace(http)
        let failed = http.isFailure
        requests.add(http, failed: failed)
        hostStats.update(at: rows.host) { $0.add(http, failed: failed) }
        endpointStats.update(at: rows.endpoint) { $0.add(http, failed: failed) }
        if failed { addFailure(of: slot, endpointRow: rows.endpoint) }
        return
      }
    }
    slot.withTransaction { add($0) }
    // `lastRequest` is now this record's request (repeated or new): keep the bytes it came from,
    // and its route.
    lastRequest?.capture(http)
    if let host = lastRequest?.hostRow, let endpoint = lastRequest?.endpointRow {
      routes.remember(http, host: host, endpoint: endpoint)
    }
  }

  /// The failed request in `slot`: counted in its group, decoded only when it is the group's first
  /// (its message is in the text).
  private mutating func addFailure(of slot: RecordSlot, endpointRow: Int) {
    if let http = slot.http, requestFailures.countIfKnown(http, endpointRow: endpointRow) { return }
    slot.withTransaction { transaction in
      if case .http(let http) = transaction { requestFailures.add(http, endpointRow: endpointRow) }
    }
  }

  /// Counts an http record as a record, in place.
  private mutating func countInPlace(_ http: HTTPRecordView) {
    records += 1
    recordsCountedInPlace += 1
    extendSpan(start: http.startUnixNs, durationMs: http.durationMs)
  }

  /// Adds the repeats counted from slots to the rows of their request, `lastRequest`: before
  /// anything else is counted (it may change `lastRequest`), and at the end of a drain.
  private mutating func addPendingRepeats() {
    guard repeats.count > 0, let lastRequest else { return }
    requests.add(repeats)
    hostStats.update(at: lastRequest.hostRow) { $0.add(repeats) }
    endpointStats.update(at: lastRequest.endpointRow) { $0.add(repeats) }
    repeats.removeAll()
  }

  private mutating func add(_ http: HTTPRecord) {
    requests.add(http)
    let rows: (host: Int, endpoint: Int)
    // Asked in place: a copy of the last request (its strings and bytes retained and released)
    // cost more than the question, at every record whose target differs from the last.
    if let repeated = lastRequest?.rows(ifRepeatedBy: http) {
      rows = repeated
    } else {
      rows = self.rows(of: http)
      let bytes = lastRequest?.takeBytes() ?? HTTPRequestBytes()
      lastRequest = RepeatedRequest(http, hostRow: rows.host, endpointRow: rows.endpoint, bytes: bytes)
    }
    hostStats.update(at: rows.host) { $0.add(http) }
    endpointStats.update(at: rows.endpoint) { $0.add(http) }
    if http.isFailure { requestFailures.add(http, endpointRow: rows.endpoint) }
    slowest.add(http)
  }

  /// The endpoint in row `row` of the endpoint table.
  func endpoint(at row: Int) -> EndpointKey { endpointStats.key(at: row) }

  /// Where the request's host and endpoint are counted, their rows made when new.
  private mutating func rows(of http: HTTPRecord) -> (host: Int, endpoint: Int) {
    let host: HostKey
    if let lastHost, lastHost.header == http.host, lastHost.scheme == http.scheme {
      host = lastHost.key
    } else {
      host = HostKey(http)
      lastHost = (http.host, http.scheme, host)
    }
    var endpoint =
      if let call = GRPCCall(http) {
        EndpointKey(method: "gRPC", host: host, path: call.service + "/" + call.method)
      } else {
        EndpointKey(method: http.method, host: host, path: EndpointKey.path(of: http.target))
      }
    if endpointStats.count >= Self.maximumEndpoints && !endpointStats.contains(endpoint) {
      endpoint.path = Self.otherPaths
    }
    return (hostStats.row(of: host, initial: HostStats()), endpointStats.row(of: endpoint, initial: RequestStats()))
  }

  private mutating func add(_ connection: ConnectionRecord) {
    switch connection.role {
    case .client: connectionsOpened += 1
    case .server: connectionsAccepted += 1
    }
    if connection.tlsVersion != nil && connection.tlsBytesSent == nil { undecodedTLSConnections += 1 }
    if let error = connection.httpError {
      unreadHTTPConnections += 1
      if firstHTTPError == nil { firstHTTPError = error }
    }
    let host = HostKey(connection)
    if let host { hostStats.update(host, initial: HostStats()) { $0.add(connection) } }
    if let error = connection.error {
      failedConnections += 1
      let target = host?.description ?? connection.peerAddress ?? "(unknown peer)"
      addFailure(error, target: target)
    }
    slowest.add(connection)
  }

  private mutating func add(_ lookup: DNSRecord) {
    dns.add(lookup)
    dnsByName[lookup.host.lowercased(), default: DNSStats()].add(lookup)
    if let error = lookup.error { addFailure(error, target: lookup.host) }
  }

  private mutating func addFailure(_ error: RecordedError, target: String) {
    let key = FailureGroup.Key(call: error.call, code: error.code)
    failures[key, default: FailureGroup(error, target: target)].count += 1
  }

  private mutating func extendSpan(start: UInt64, durationMs: Double) {
    let end = start + (durationMs.isFinite && durationMs > 0 ? UInt64(durationMs * 1_000_000) : 0)
    spanStart = min(spanStart, start)
    spanEnd = max(spanEnd, end)
  }
}
