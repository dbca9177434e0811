import Foundation
import NetMonitor
import Testing

@testable import ElfHookCLI

/// The aggregates, checked against answers computed here from the scenario's own numbers.
@Suite("TransactionSummary")
struct TransactionSummaryTests {
  let scenario = ReportScenario()

  func summary(of transactions: [Transaction], slowest: Int = 10) -> TransactionSummary {
    var summary = TransactionSummary(slowestCapacity: slowest)
    for transaction in transactions { summary.add(transaction) }
    return summary
  }

  /// The nearest-rank percentile by its definition: the smallest value that at least `percent`%
  /// of the values do not exceed.
  func percentile(_ percent: Int, _ values: [Double]) -> Double {
    let sorted = values.sorted()
    return sorted.enumerated().first { index, _ in (index + 1) * 100 >= percent * sorted.count }!.element
  }

  func expectClose(_ actual: Double?, _ expected: Double, sourceLocation: SourceLocation = #_sourceLocation) {
    // Durations are kept as Float: 24 bits of mantissa.
    #expect(
      abs((actual ?? .nan) - expected) <= expected * 1e-6 + 1e-6, "\(String(describing: actual)) vs \(expected)",
      sourceLocation: sourceLocation)
  }

  var http: [HTTPRecord] { scenario.requests.map(\.record) }

  @Test("totals: requests, errors (5xx and no response), connections, DNS, span")
  func totals() {
    let summary = summary(of: scenario.transactions)
    #expect(summary.records == scenario.transactions.count)
    #expect(summary.requests.requests == http.count)
    let failedRequests = http.filter { ($0.status ?? 999) >= 500 }.count
    #expect(failedRequests == 3)  // 503, 500, and the one without a response
    #expect(summary.requests.errors == failedRequests)
    #expect(summary.connectionsOpened == 8)  // 4 + 1 keep-alive, 2 refused, 1 database
    #expect(summary.connectionsAccepted == 1)
    #expect(summary.failedConnections == 3)  // 2 refused, 1 reset
    #expect(summary.dns.lookups == 5)
    #expect(summary.dns.failures == 1)
    #expect(summary.errors == 3 + 3 + 1)
    #expect(summary.requests.bytesSent == http.reduce(0) { $0 + $1.requestBytes })
    #expect(summary.requests.bytesReceived == http.reduce(0) { $0 + $1.responseBytes })
    let first = scenario.transactions.map(\.startUnixNs).min()!
    #expect(summary.span?.lowerBound == first)
  }

  @Test("per host: Host header with the scheme's default port, connections by name, p50/p95/max")
  func hosts() throws {
    let summary = summary(of: scenario.transactions)
    #expect(
      Set(summary.hosts.keys.map(\.description)) == [
        "api.example.com:443", "cdn.example.net:443", "127.0.0.1:8080", "127.0.0.1:9", "db.internal:5432",
        "gateway.local:8080",
      ])
    let api = try #require(summary.hosts[HostKey(address: "api.example.com", port: 443)])
    let apiRequests = http.filter { $0.host == "api.example.com" }
    #expect(api.http.requests == 9)
    #expect(api.connections == 2)
    #expect(api.errors == 2)  // 503 and 500
    let durations = apiRequests.map(\.durationMs)
    let quantiles = try #require(api.http.durations.quantiles)
    expectClose(quantiles.p50, percentile(50, durations))
    expectClose(quantiles.p95, percentile(95, durations))
    #expect(quantiles.maximum == durations.max())
    #expect(api.bytesReceived == apiRequests.reduce(0) { $0 + $1.responseBytes })

    let refused = try #require(summary.hosts[HostKey(address: "127.0.0.1", port: 9)])
    #expect(refused.connections == 2 && refused.errors == 2 && refused.http.requests == 0)
    // Socket bytes count only for connections that carried no HTTP.
    let database = try #require(summary.hosts[HostKey(address: "db.internal", port: 5432)])
    #expect(database.bytesSent == 12_000 && database.bytesReceived == 340_000)
    let local = try #require(summary.hosts[HostKey(address: "127.0.0.1", port: 8080)])
    #expect(local.errors == 2)  // the request without a response, and its reset connection
  }

  @Test("per endpoint: method, host and path without the query string")
  func endpoints() {
    let summary = summary(of: scenario.transactions)
    var expected: [String: Int] = [:]
    for record in http {
      let path = String(record.target.prefix { $0 != "?" })
      let host = record.host!.contains(":") ? record.host! : record.host! + (record.scheme == .https ? ":443" : ":80")
      expected["\(record.method) \(host)\(path)", default: 0] += 1
    }
    let actual = Dictionary(uniqueKeysWithValues: summary.endpoints.map { ($0.key.description, $0.value.requests) })
    #expect(actual == expected)
    #expect(!actual.keys.contains { $0.contains("?") || $0.contains("s3cr3t") })
  }

  @Test(
    "an endpoint's path is decided by the target's bytes before its query or fragment",
    arguments: [
      ("/a/b?q=1", "/a/b"), ("/a?next=http://x.example/y", "/a"), ("/redirect/http://x.example/y?q", "/redirect/http://x.example/y"),
      ("http://proxy.example/p?u=https://z/", "/p"), ("http://proxy.example", "/"), ("http://proxy.example?x=a/b", "/"),
      ("/f#http://x/y", "/f"), ("*", "*"), ("example.com:443", ""), ("example.com:443?x=http://y/z", ""),
    ])
  func endpointPath(target: String, path: String) {
    #expect(EndpointKey.path(of: target) == path)
  }

  @Test("DNS lookups per name, and failures grouped by call and code")
  func dnsAndFailures() throws {
    let summary = summary(of: scenario.transactions)
    let lookups = scenario.transactions.compactMap { if case .dns(let record) = $0 { record } else { nil } }
    let successful = lookups.filter { $0.error == nil }.map(\.durationMs)
    let quantiles = try #require(summary.dns.durations.quantiles)
    expectClose(quantiles.p50, percentile(50, lookups.map(\.durationMs)))
    #expect(quantiles.maximum == lookups.map(\.durationMs).max())
    #expect(summary.dnsByName["cdn.example.net"]?.lookups == 2)
    #expect(summary.dnsByName["no-such-host.invalid"]?.failures == 1)
    #expect(successful.count == 4)

    let failures = Dictionary(
      uniqueKeysWithValues: summary.failures.values.map { ("\($0.key.call) \($0.key.code)", $0) })
    #expect(Set(failures.keys) == ["connect ECONNREFUSED", "getaddrinfo EAI_NONAME", "read ECONNRESET"])
    let refused = try #require(failures["connect ECONNREFUSED"])
    #expect(refused.count == 2)
    #expect(refused.firstTarget == "127.0.0.1:9")
    #expect(refused.message == String(cString: strerror(ECONNREFUSED)))
    #expect(failures["getaddrinfo EAI_NONAME"]?.firstTarget == "no-such-host.invalid")
  }

  @Test("slowest requests: the N longest, slowest first, joined to connection records that come later")
  func slowestWithLateConnections() throws {
    let summary = summary(of: scenario.transactions, slowest: 5)
    let expected = scenario.requests.sorted { $0.record.durationMs > $1.record.durationMs }.prefix(5)
    let slowest = summary.slowest.requests
    #expect(slowest.map(\.http) == expected.map(\.record))
    for (timed, plan) in zip(slowest, expected) {
      let phases = timed.phases
      expectClose(phases.dns, plan.dns)
      expectClose(phases.connect, plan.connect)
      expectClose(phases.tls, plan.tls)
      expectClose(phases.wait, plan.wait)
      #expect(abs(phases.transfer - plan.transfer) < 1e-9)
    }
  }

  @Test("the join works when connection records come first, and a reused connection has no setup")
  func joinInEitherOrder() throws {
    // Merged files sorted by start: every connection comes before its requests.
    let sorted = scenario.transactions.sorted { $0.startUnixNs < $1.startUnixNs }
    let summary = summary(of: sorted, slowest: scenario.requests.count)
    for plan in scenario.requests {
      let timed = try #require(summary.slowest.requests.first { $0.http == plan.record })
      expectClose(timed.phases.setup, plan.setup)
      #expect((timed.setup == nil) == plan.record.reusedConnection)
    }
  }

  @Test("connections are told apart by pid: the same id in two processes joins to its own process")
  func joinByPid() throws {
    let summary = summary(of: scenario.transactions, slowest: scenario.requests.count)
    let gatewayFirst = try #require(
      scenario.requests.first { $0.record.pid == 4242 && $0.record.connectionId == 1 && !$0.record.reusedConnection })
    let workerFirst = try #require(
      scenario.requests.first { $0.record.pid == 4343 && $0.record.connectionId == 1 && !$0.record.reusedConnection })
    #expect(gatewayFirst.connect != workerFirst.connect)
    for plan in [gatewayFirst, workerFirst] {
      let timed = try #require(summary.slowest.requests.first { $0.http == plan.record })
      expectClose(timed.phases.connect, plan.connect)
      expectClose(timed.phases.tls, plan.tls)
    }
  }

  @Test("TimedRequest.all joins every request and orders them by the start of their bars")
  func allRequests() {
    let timed = TimedRequest.all(in: scenario.transactions)
    #expect(timed.count == scenario.requests.count)
    #expect(timed.map(\.startUnixNs) == timed.map(\.startUnixNs).sorted())
    for request in timed {
      let plan = scenario.requests.first { $0.record == request.http }!
      #expect(abs(Int64(bitPattern: request.startUnixNs &- plan.barStartUnixNs)) <= 2)
      expectClose(request.phases.total, plan.setup + plan.wait + plan.transfer)
    }
  }

  @Test("a long run keeps a bounded slowest set and a bounded endpoint table")
  func bounded() {
    var summary = TransactionSummary(slowestCapacity: 10)
    let count = 3 * TransactionSummary.maximumEndpoints
    for index in 0..<count {
      summary.add(
        .http(
          HTTPRecord(
            pid: 1, process: "load", startUnixNs: 1_000_000 * UInt64(index), durationMs: Double(index % 997),
            connectionId: UInt64(index / 10), scheme: .http, method: "GET", host: "svc:8080",
            target: "/users/\(index)", status: 200, ttfbMs: 0.5, requestBytes: 100, responseBytes: 200,
            reusedConnection: index % 10 != 0)))
    }
    #expect(summary.slowest.requests.count == 10)
    let longest = (0..<count).map { Double($0 % 997) }.sorted(by: >).prefix(10)
    #expect(summary.slowest.requests.map(\.http.durationMs) == Array(longest))
    #expect(summary.endpoints.count == TransactionSummary.maximumEndpoints + 1)
    let other = EndpointKey(
      method: "GET", host: HostKey(address: "svc", port: 8080), path: TransactionSummary.otherPaths)
    #expect(summary.endpoints[other]?.requests == count - TransactionSummary.maximumEndpoints)
    #expect(summary.requests.requests == count)
  }

  @Test("a request repeating the last one's method, Host, scheme and target counts in its rows; any change moves it")
  func repeatedRequests() {
    // (method, Host, scheme, target); equal strings are made apart, so that some share no storage.
    let long = "/a/path/longer/than/fifteen/bytes"
    let variants: [(String, String?, HTTPScheme, String)] = [
      ("GET", "a.example", .http, "/x"), ("GET", "a.example", .http, "/x?q=1"), ("GET", "a.example", .http, "/y"),
      ("POST", "a.example", .http, "/x"), ("GET", "b.example", .http, "/x"), ("GET", "a.example", .https, "/x"),
      ("GET", nil, .http, "/x"), ("GET", "A.EXAMPLE", .http, "/x"), ("GET", "a.example:80", .http, "/x"),
      ("GET", "a.example", .http, String(long.reversed().reversed())), ("GET", "a.example", .http, long + "?k=1"),
    ]
    let order =
      variants.indices.flatMap { [$0, $0, $0] } + (0..<50).map { $0 % variants.count }
      + (0..<50).map { ($0 * 7 + $0 / 3) % variants.count } + [0, 0, 1, 1, 0, 1]
    var summary = TransactionSummary()
    var endpoints: [String: (requests: Int, bytes: UInt64)] = [:]
    var hosts: [String: Int] = [:]
    for (index, variant) in order.enumerated() {
      let (method, host, scheme, target) = variants[variant]
      let record = HTTPRecord(
        pid: 1, process: "p", startUnixNs: UInt64(index), durationMs: Double(index), connectionId: 1,
        scheme: scheme, method: String(method.reversed().reversed()), host: host, target: target,
        status: 200, ttfbMs: 1, requestBytes: UInt64(index), responseBytes: 1, reusedConnection: true)
      summary.add(.http(record))
      let endpoint = EndpointKey(record).description
      endpoints[endpoint] = ((endpoints[endpoint]?.requests ?? 0) + 1, (endpoints[endpoint]?.bytes ?? 0) + UInt64(index))
      hosts[HostKey(record).description, default: 0] += 1
    }
    let counted = Dictionary(
      uniqueKeysWithValues: summary.endpoints.map { ($0.key.description, $0.value) })
    #expect(counted.mapValues(\.requests) == endpoints.mapValues(\.requests))
    #expect(counted.mapValues(\.bytesSent) == endpoints.mapValues(\.bytes))
    #expect(counted.mapValues(\.durations.count) == endpoints.mapValues(\.requests))
    let hostRequests = Dictionary(uniqueKeysWithValues: summary.hosts.map { ($0.key.description, $0.value.http.requests) })
    #expect(hostRequests == hosts)
    #expect(summary.requests.requests == order.count)
  }

  @Test("once the endpoint table is full, a new path repeated counts in the other-paths row, a known one in its own")
  func repeatedRequestsPastTheBound() {
    var summary = TransactionSummary()
    func add(_ target: String) {
      summary.add(
        .http(
          HTTPRecord(
            pid: 1, process: "p", startUnixNs: 0, durationMs: 1, connectionId: 1, scheme: .http, method: "GET",
            host: "svc", target: target, status: 200, ttfbMs: 1, requestBytes: 1, responseBytes: 1,
            reusedConnection: true)))
    }
    for index in 0..<TransactionSummary.maximumEndpoints { add("/known/\(index)") }
    for target in ["/new", "/new", "/known/7", "/known/7", "/new", "/newer", "/newer"] { add(target) }
    let counts = Dictionary(uniqueKeysWithValues: summary.endpoints.map { ($0.key.path, $0.value.requests) })
    #expect(counts.count == TransactionSummary.maximumEndpoints + 1)
    #expect(counts[TransactionSummary.otherPaths] == 5)
    #expect(counts["/known/7"] == 3)
    #expect(counts["/new"] == nil)
  }

  @Test("percentiles are nearest-rank, exact at every count", arguments: [1, 2, 19, 20, 21, 60, 99, 100, 101, 1000])
  func percentiles(count: Int) throws {
    var samples = DurationSamples()
    let values = (0..<count).map { Double(($0 * 7919) % count) + 0.5 }
    for value in values { samples.add(value) }
    let quantiles = try #require(samples.quantiles)
    #expect(quantiles.p50 == percentile(50, values))
    #expect(quantiles.p95 == percentile(95, values))
    #expect(quantiles.maximum == values.max())
  }

  @Test("a record without a duration (null) counts, but adds no sample")
  func missingDuration() {
    var summary = TransactionSummary()
    summary.add(.dns(DNSRecord(pid: 1, process: "p", startUnixNs: 5, durationMs: .nan, host: "a", addresses: [])))
    summary.add(.dns(DNSRecord(pid: 1, process: "p", startUnixNs: 6, durationMs: 3, host: "a", addresses: [])))
    #expect(summary.dns.lookups == 2)
    #expect(summary.dns.durations.count == 1)
    #expect(summary.dns.durations.quantiles?.p50 == 3)
  }

  @Test(
    "Host headers: ports, IPv6 literals, case, absolute-form targets",
    arguments: [
      ("Example.COM", HTTPScheme.https, "/a?b", "example.com:443", "/a"),
      ("example.com:8443", .https, "/", "example.com:8443", "/"),
      ("[::1]:8080", .http, "/x#frag", "[::1]:8080", "/x"),
      ("[2001:db8::1]", .http, "/", "[2001:db8::1]:80", "/"),
      ("proxy-target", .http, "http://origin.example/p/q?x=1", "proxy-target:80", "/p/q"),
    ])
  func hostHeaders(header: String, scheme: HTTPScheme, target: String, host: String, path: String) {
    let record = HTTPRecord(
      pid: 1, process: "p", startUnixNs: 0, durationMs: 1, connectionId: 1, scheme: scheme, method: "GET",
      host: header, target: target, status: 200, ttfbMs: 1, requestBytes: 1, responseBytes: 1,
      reusedConnection: false)
    #expect(HostKey(record).description == host)
    #expect(EndpointKey(record).path == path)
  }

  @Test("failed requests grouped by endpoint and status, commonest first, with the first one's message")
  func failedRequests() {
    func record(_ target: String, status: Int?, complete: Bool? = nil, grpc: Int? = nil, message: String? = nil)
      -> Transaction
    {
      var record = HTTPRecord(
        pid: 1, process: "p", startUnixNs: 0, durationMs: 1, connectionId: 1, scheme: .http, method: "POST",
        host: "svc:50051", target: target, status: status, ttfbMs: 1, requestBytes: 1, responseBytes: 1,
        responseComplete: complete, reusedConnection: true)
      record.grpcStatus = grpc
      record.grpcMessage = message
      return .http(record)
    }
    let transactions = [
      record("/shop.Cart/Add", status: 200, complete: true, grpc: 5, message: "no cart %C3%BC"),
      record("/shop.Cart/Add", status: 200, complete: true, grpc: 5, message: "another message"),
      record("/shop.Cart/Add", status: 200, complete: true, grpc: 0),
      record("/shop.Cart/Add", status: 200, complete: false, grpc: 14),
      record("/api/items?page=2", status: 503, complete: true),
      record("/api/items?page=3", status: 503, complete: true),
      record("/api/items?page=4", status: 503, complete: true),
      record("/api/items", status: 404, complete: true),  // a client's error, not the server's failure
      record("/api/upload", status: 200, complete: false),
      record("/api/slow", status: nil),
    ]
    let summary = summary(of: transactions)
    let groups = summary.requestFailures.commonest.map {
      (summary.endpoint(at: $0.key.endpointRow).description, $0.key.statusText, $0.count, $0.message)
    }
    let expected = [
      ("POST svc:50051/api/items", "503", 3, ""),
      ("gRPC svc:50051 shop.Cart/Add", "NOT_FOUND", 2, "no cart ü"),
      ("gRPC svc:50051 shop.Cart/Add", "UNAVAILABLE", 1, "response cut short"),
      ("POST svc:50051/api/upload", "200", 1, "response cut short"),
      ("POST svc:50051/api/slow", "-", 1, "no response"),
    ]
    #expect(groups.count == expected.count && summary.errors == 8, "\(groups)")
    for (group, expected) in zip(groups, expected) {
      #expect(group.0 == expected.0 && group.1 == expected.1 && group.2 == expected.2 && group.3 == expected.3)
    }
    let text = renderSummary(summary, width: 100, color: false)
    #expect(text.contains("FAILED REQUESTS") && text.contains("gRPC svc:50051 shop.Cart/Add    NOT_FOUND      2  no cart ü"), "\(text)")
  }

  @Test("an IPv4-mapped IPv6 peer (Java's sockets) is the same host as its IPv4 address")
  func mappedAddresses() {
    #expect(HostKey(address: "::ffff:127.0.0.1", port: 8080) == HostKey(address: "127.0.0.1", port: 8080))
    #expect(HostKey(address: "::FFFF:10.0.0.1", port: 443).description == "10.0.0.1:443")
    #expect(HostKey(address: "::ffff:7f00:1", port: 80).description == "[::ffff:7f00:1]:80")
    #expect(HostKey(address: "::1", port: 80).description == "[::1]:80")
    #expect(HostKey(address: "::ffff:", port: 80).description == "[::ffff:]:80")
  }
}
