import Foundation
import NetMonitor
import TestSupport

/// A realistic capture built from phase times the scenario chooses itself, so a test knows every
/// expected answer (phases, bar positions, counts) without asking the code under test.
///
/// Two client processes (one with the same connection ids as the other, to test the (pid, id)
/// join), keep-alive HTTPS connections with DNS, connect and TLS, a plain HTTP service on a
/// numeric address, 5xx and 4xx answers, a request that got no response, a failed DNS lookup,
/// refused connects, a database connection without HTTP, and a server-side connection.
/// `transactions` are in the order the monitor writes them: a connection's record after its
/// requests' (at close).
struct ReportScenario {
  /// One HTTP request and the phases it was built from, in milliseconds.
  struct Request {
    var record: HTTPRecord
    var dns = 0.0
    var connect = 0.0
    var tls = 0.0
    var wait = 0.0
    var transfer = 0.0

    var setup: Double { dns + connect + tls }
    /// When the request's bar starts: its setup phases come before its first byte.
    var barStartUnixNs: UInt64 { record.startUnixNs - nanoseconds(setup) }
  }

  private(set) var transactions: [Transaction] = []
  private(set) var requests: [Request] = []
  private var random: SplitMix64
  private var clock: UInt64 = 1_767_225_600_000_000_000
  private var nextConnectionId: [Int32: UInt64] = [:]

  static let targets = [
    "/v1/users/42?page=2", "/v1/orders", "/v1/orders?status=open", "/static/app.js", "/health",
    "/v1/search?q=swift&access_token=s3cr3t",
  ]

  init(seed: UInt64 = 7) {
    random = SplitMix64(seed: seed)
    let gateway: (Int32, String) = (4242, "api-gateway")
    let worker: (Int32, String) = (4343, "worker")
    keepAlive(gateway, host: "api.example.com", port: 443, https: true, statuses: [200, 200, 503, 200, 404, 200])
    keepAlive(gateway, host: "cdn.example.net", port: 443, https: true, statuses: [200, 200, 200, 304])
    keepAlive(gateway, host: "cdn.example.net", port: 443, https: true, statuses: [200, 200, 200, 200])
    keepAlive(gateway, host: "127.0.0.1", port: 8080, https: false, statuses: [200, 201, 200, nil])
    failedLookup(gateway, host: "no-such-host.invalid")
    refusedConnect(gateway, port: 9)
    refusedConnect(gateway, port: 9)
    database(gateway)
    keepAlive(worker, host: "api.example.com", port: 443, https: true, statuses: [200, 200, 500])
    serverSide(gateway, statuses: [200, 200])
  }

  // MARK: - Building blocks

  /// A DNS lookup (for a name), a connection, `statuses.count` requests one after another on it
  /// (`nil`: no response), then the connection's close.
  private mutating func keepAlive(
    _ process: (pid: Int32, name: String), host: String, port: UInt16, https: Bool, statuses: [Int?]
  ) {
    let numeric = host.first?.isNumber == true
    let dns = numeric ? 0 : random.milliseconds(2...30)
    if !numeric {
      append(
        .dns(
          DNSRecord(
            pid: process.pid, process: process.name, startUnixNs: clock, durationMs: dns, host: host,
            addresses: ["192.0.2.\(random.next() % 200 + 1)"])))
    }
    advance(dns)
    let connectionStart = clock
    let connect = numeric ? random.milliseconds(0.05...1) : random.milliseconds(5...40)
    let tls = https ? random.milliseconds(20...60) : 0
    advance(connect + tls)
    let id = connectionId(process.pid)
    var sent: UInt64 = 0
    var received: UInt64 = 0
    var error: RecordedError?
    for (index, status) in statuses.enumerated() {
      if index > 0 { advance(random.milliseconds(1...50)) }
      let wait = random.milliseconds(8...220)
      let transfer = status == nil ? 0 : random.milliseconds(0.5...150)
      let method = index % 3 == 2 ? "POST" : "GET"
      let record = HTTPRecord(
        pid: process.pid, process: process.name, startUnixNs: clock, durationMs: wait + transfer,
        connectionId: id, scheme: https ? .https : .http, method: method,
        host: port == 443 || port == 80 ? host : "\(host):\(port)",
        target: Self.targets[Int(random.next() % UInt64(Self.targets.count))], status: status,
        ttfbMs: status == nil ? nil : wait, requestBytes: 120 + random.next() % 900,
        responseBytes: status == nil ? 0 : 300 + random.next() % 150_000, reusedConnection: index > 0)
      var request = Request(record: record, wait: wait, transfer: transfer)
      if index == 0 { (request.dns, request.connect, request.tls) = (dns, connect, tls) }
      requests.append(request)
      sent += record.requestBytes
      received += record.responseBytes
      advance(wait + transfer)
      append(.http(record))
      if status == nil { error = .errno(ECONNRESET, call: "read") }
    }
    append(
      .connection(
        ConnectionRecord(
          pid: process.pid, process: process.name, startUnixNs: connectionStart,
          durationMs: Double(clock - connectionStart) / 1_000_000, id: id, role: .client, transport: .tcp,
          host: numeric ? nil : host, peerAddress: numeric ? host : "192.0.2.10", peerPort: port,
          dnsMs: numeric ? nil : dns, connectMs: connect, tlsMs: https ? tls : nil, tlsVersion: https ? "TLSv1.3" : nil,
          bytesSent: sent + 600, bytesReceived: received + 4000, tlsBytesSent: https ? sent : nil,
          tlsBytesReceived: https ? received : nil, httpExchanges: statuses.count, error: error)))
    advance(random.milliseconds(5...80))
  }

  private mutating func failedLookup(_ process: (pid: Int32, name: String), host: String) {
    let duration = random.milliseconds(10...40)
    append(
      .dns(
        DNSRecord(
          pid: process.pid, process: process.name, startUnixNs: clock, durationMs: duration, host: host,
          addresses: [], error: .addressInfo(EAI_NONAME))))
    advance(duration + 3)
  }

  private mutating func refusedConnect(_ process: (pid: Int32, name: String), port: UInt16) {
    let duration = random.milliseconds(0.1...0.9)
    append(
      .connection(
        ConnectionRecord(
          pid: process.pid, process: process.name, startUnixNs: clock, durationMs: duration,
          id: connectionId(process.pid), role: .client, transport: .tcp, peerAddress: "127.0.0.1", peerPort: port,
          connectMs: duration, bytesSent: 0, bytesReceived: 0, httpExchanges: 0,
          error: .errno(ECONNREFUSED, call: "connect"))))
    advance(duration + 2)
  }

  /// A PostgreSQL connection: bytes, no HTTP.
  private mutating func database(_ process: (pid: Int32, name: String)) {
    let duration = random.milliseconds(300...900)
    append(
      .connection(
        ConnectionRecord(
          pid: process.pid, process: process.name, startUnixNs: clock, durationMs: duration,
          id: connectionId(process.pid), role: .client, transport: .tcp, host: "db.internal",
          peerAddress: "10.0.0.5", peerPort: 5432, dnsMs: 1.5, connectMs: 0.7, bytesSent: 12_000,
          bytesReceived: 340_000, httpExchanges: 0)))
    advance(duration)
  }

  /// Requests the process served on a connection it accepted.
  private mutating func serverSide(_ process: (pid: Int32, name: String), statuses: [Int]) {
    let start = clock
    let id = connectionId(process.pid)
    for (index, status) in statuses.enumerated() {
      let wait = random.milliseconds(1...20)
      let transfer = random.milliseconds(0.1...2)
      let record = HTTPRecord(
        pid: process.pid, process: process.name, startUnixNs: clock, durationMs: wait + transfer,
        connectionId: id, scheme: .http, method: "GET", host: "gateway.local:8080", target: "/status",
        status: status, ttfbMs: wait, requestBytes: 90, responseBytes: 400, reusedConnection: index > 0)
      requests.append(Request(record: record, wait: wait, transfer: transfer))
      advance(wait + transfer + 1)
      append(.http(record))
    }
    append(
      .connection(
        ConnectionRecord(
          pid: process.pid, process: process.name, startUnixNs: start, durationMs: Double(clock - start) / 1_000_000,
          id: id, role: .server, transport: .tcp, peerAddress: "10.0.0.7", peerPort: 51234,
          bytesSent: 800, bytesReceived: 180, httpExchanges: statuses.count)))
  }

  private mutating func connectionId(_ pid: Int32) -> UInt64 {
    let id = nextConnectionId[pid, default: 1]
    nextConnectionId[pid] = id + 1
    return id
  }

  private mutating func advance(_ milliseconds: Double) {
    clock += nanoseconds(milliseconds)
  }

  private mutating func append(_ transaction: Transaction) {
    transactions.append(transaction)
  }
}

func nanoseconds(_ milliseconds: Double) -> UInt64 {
  UInt64((milliseconds * 1_000_000).rounded())
}

extension SplitMix64 {
  /// A duration in `range`, rounded to the microsecond as the monitor records them.
  mutating func milliseconds(_ range: ClosedRange<Double>) -> Double {
    let unit = Double(next() >> 11) / Double(1 << 53)
    return ((range.lowerBound + unit * (range.upperBound - range.lowerBound)) * 1000).rounded() / 1000
  }
}
