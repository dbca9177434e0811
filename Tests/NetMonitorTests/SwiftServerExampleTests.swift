import Foundation
import Testing
import TestSupport

@testable import NetMonitor

/// `examples/swift-server` — Hummingbird serving, AsyncHTTPClient calling an upstream, NetMonitor
/// started with one call — built with `swift build` and run for real: curl calls it on 127.0.0.1,
/// it calls `counting_upstream.py` by the name `localhost`, and its records are compared with what
/// curl and the upstream counted on their side of each socket.
@Suite("The Swift server example, monitored by NetMonitor", .serialized)
struct SwiftServerExampleTests {
  /// `/proxy` requests (on one keep-alive connection of one curl) and `/hello` requests (one curl each).
  static let proxyRequests = 4
  static let helloRequests = 3
  /// The upstream's body size: not a round number, larger than one read.
  static let upstreamBody = 54_321

  // MARK: The run

  @Test("HTTP upstream: client exchanges, DNS and connection timings, exact bytes; the inbound exchanges")
  func plainUpstream() throws {
    let scratch = try TemporaryDirectory("swift-server", inSharedMemory: false)
    defer { scratch.remove() }
    let run = try Self.runExample(in: scratch, tls: nil)

    // Outbound: one http record per /proxy, its response exactly what the upstream wrote.
    let upstream = run.upstreamConnections
    let sentResponses = upstream.flatMap(\.responses)
    let sentRequests = upstream.flatMap(\.requests)
    try #require(sentResponses.count == Self.proxyRequests, "the upstream answered \(sentResponses.count) requests")
    let outbound = run.http.filter { $0.host == "localhost:\(run.upstreamPort)" }
    #expect(outbound.count == Self.proxyRequests)
    for (record, index) in zip(outbound, outbound.indices) {
      #expect(record.method == "GET")
      #expect(record.target == "/data/\(Self.upstreamBody)")
      #expect(record.status == 200)
      #expect(record.scheme == .http)
      #expect(record.responseBytes == UInt64(sentResponses[index]))
      #expect(record.requestBytes == UInt64(sentRequests[index]))
      #expect(record.ttfbMs != nil)
      #expect(run.clientConnectionIDs.contains(record.connectionId), "\(record) is on a client connection")
    }

    // Its connections: named localhost (the lookup joined), timed, bytes as the upstream counted them.
    let clientConnections = run.connections.filter { $0.role == .client && $0.peerPort == run.upstreamPort }
    #expect(clientConnections.count == upstream.count)
    for connection in clientConnections {
      #expect(connection.host == "localhost")
      #expect(connection.peerAddress == "127.0.0.1")
      #expect(connection.dnsMs != nil, "dns_ms of \(connection)")
      #expect(connection.connectMs != nil, "connect_ms of \(connection)")
      #expect(connection.tlsMs == nil)
      #expect(connection.error == nil)
    }
    #expect(
      Self.sorted(clientConnections.map { [$0.bytesSent, $0.bytesReceived] })
        == Self.sorted(upstream.map { [$0.received, $0.sent] }))
    #expect(clientConnections.compactMap(\.httpExchanges).reduce(0, +) == Self.proxyRequests)
    #expect(run.dns.contains { $0.host == "localhost" && $0.addresses.contains("127.0.0.1") })

    // The same records as the server's Prometheus backend received them through MetricsSink.
    #expect(run.metric("http_client_request_duration_seconds_count") == Double(outbound.count))
    #expect(
      run.metric("elfhook_http_client_response_size_bytes_sum") == Double(outbound.map(\.responseBytes).reduce(0, +)))
    #expect(
      run.metric("elfhook_http_client_request_size_bytes_sum") == Double(outbound.map(\.requestBytes).reduce(0, +)))
    #expect(run.metric("elfhook_connection_connect_duration_seconds_count") == Double(clientConnections.count))

    try Self.expectInbound(run)
  }

  @Test("HTTPS upstream and HTTPS endpoint: swift-nio-ssl's BoringSSL, linked in, attached inline — the exchanges and the TLS account on both sides")
  func tlsUpstream() throws {
    let scratch = try TemporaryDirectory("swift-server", inSharedMemory: false)
    defer { scratch.remove() }
    let certificate = try LoopbackServer.makeCertificate(in: scratch.url)
    let run = try Self.runExample(in: scratch, tls: certificate)

    // Outbound: one https record per /proxy, its plaintext exactly what the upstream wrote and read.
    let upstream = run.upstreamConnections
    let sentResponses = upstream.flatMap(\.responses)
    let sentRequests = upstream.flatMap(\.requests)
    try #require(sentResponses.count == Self.proxyRequests, "the upstream answered every request")
    let outbound = run.http.filter { $0.host == "localhost:\(run.upstreamPort)" }
    #expect(outbound.count == Self.proxyRequests)
    for (record, index) in zip(outbound, outbound.indices) {
      #expect(record.method == "GET" && record.target == "/data/\(Self.upstreamBody)" && record.status == 200)
      #expect(record.scheme == .https && record.tlsVersion?.hasPrefix("TLSv1.") == true, "\(record)")
      #expect(record.responseBytes == UInt64(sentResponses[index]))
      #expect(record.requestBytes == UInt64(sentRequests[index]))
      #expect(run.clientConnectionIDs.contains(record.connectionId), "\(record) is on a client connection")
    }
    // The connections: named, timed, the handshake and the plaintext counted (CNIOBoringSSL_SSL_*
    // in the executable's .symtab, their memory BIOs joined to the socket by the event loop's
    // thread), the ciphertext exactly as the upstream saw it.
    let clientConnections = run.connections.filter { $0.role == .client && $0.peerPort == run.upstreamPort }
    #expect(clientConnections.count == upstream.count)
    for connection in clientConnections {
      #expect(connection.host == "localhost")
      #expect(connection.dnsMs != nil && connection.connectMs != nil && connection.error == nil)
      #expect(connection.tlsMs != nil && connection.tlsVersion?.hasPrefix("TLSv1.") == true, "\(connection)")
    }
    #expect(clientConnections.compactMap(\.tlsBytesReceived).reduce(0, +) == UInt64(sentResponses.reduce(0, +)))
    #expect(clientConnections.compactMap(\.tlsBytesSent).reduce(0, +) == UInt64(sentRequests.reduce(0, +)))
    #expect(
      Self.sorted(clientConnections.map { [$0.bytesSent, $0.bytesReceived] })
        == Self.sorted(upstream.map { [$0.received, $0.sent] }))
    #expect(clientConnections.compactMap(\.httpExchanges).reduce(0, +) == Self.proxyRequests)
    #expect(run.metric("http_client_request_duration_seconds_count") == Double(Self.proxyRequests))

    try Self.expectInbound(run, tls: true)
  }

  /// The inbound side, the same over either upstream: one server http record per curl request, and
  /// server connections whose bytes (`tls`: plaintext bytes) are what curl sent and received.
  private static func expectInbound(_ run: Run, tls: Bool = false) throws {
    let serverIDs = Set(run.connections.filter { $0.role == .server }.map(\.id))
    let inbound = run.http.filter { serverIDs.contains($0.connectionId) }
    let proxies = inbound.filter { $0.target == "/proxy" }
    let hellos = inbound.filter { $0.target == "/hello" }
    let scrapes = inbound.filter { $0.target == "/metrics" }
    #expect(proxies.count == proxyRequests)
    #expect(hellos.count == helloRequests)
    #expect(scrapes.count == run.scrapes)
    #expect(inbound.count == proxyRequests + helloRequests + run.scrapes)
    for record in inbound {
      #expect(record.status == 200)
      #expect(record.host == "127.0.0.1:\(run.serverPort)")
      #expect(record.scheme == (tls ? .https : .http), "\(record)")
    }
    #expect(proxies.filter(\.reusedConnection).count == proxyRequests - 1, "the /proxy calls share one connection")
    // Each request and response as curl counted it.
    #expect(inbound.map(\.requestBytes).sorted() == run.curl.map(\.requestBytes).sorted())
    #expect(inbound.map(\.responseBytes).sorted() == run.curl.map(\.responseBytes).sorted())
    let bodies = run.curl.filter { $0.url.hasSuffix("/proxy") }.map(\.bodyBytes)
    #expect(bodies == Array(repeating: UInt64(upstreamBody), count: proxyRequests))

    // The connections curl opened: one for the /proxy calls, one per /hello and per scrape.
    let serverConnections = run.connections.filter { $0.role == .server && $0.error == nil }
    #expect(serverConnections.count == 1 + helloRequests + run.scrapes)
    let byCurl = Dictionary(grouping: run.curl, by: \.invocation).values.map { transfers in
      [transfers.map(\.requestBytes).reduce(0, +), transfers.map(\.responseBytes).reduce(0, +)]
    }
    let counted = serverConnections.map {
      tls ? [$0.tlsBytesReceived ?? 0, $0.tlsBytesSent ?? 0] : [$0.bytesReceived, $0.bytesSent]
    }
    #expect(sorted(counted) == sorted(byCurl))
    for connection in serverConnections {
      if tls {
        // The endpoint's BoringSSL, joined to the accepted socket by the ClientHello it read.
        #expect(connection.tlsMs != nil && connection.tlsVersion?.hasPrefix("TLSv1.") == true, "\(connection)")
        #expect(connection.bytesReceived > connection.tlsBytesReceived ?? .max, "the socket carried ciphertext")
      }
      #expect(connection.peerAddress == "127.0.0.1" && connection.connectMs == nil)
      // The caller's address is also what `localhost` resolved to: still no name, no DNS phase.
      #expect(connection.host == nil && connection.dnsMs == nil, "\(connection)")
    }

    // Metrics: every exchange served before the last scrape (all but that scrape's own), and every
    // lookup (none happens after it).
    #expect(run.metric("http_server_request_duration_seconds_count") == Double(inbound.count - 1))
    #expect(run.metric("dns_lookup_duration_seconds_count") == Double(run.dns.count))
  }

  // MARK: Running the example

  /// What one run of the example produced, and what its peers counted.
  struct Run {
    var serverPort: UInt16
    var upstreamPort: UInt16
    var records: [Transaction]
    var upstreamConnections: [UpstreamConnection]
    var curl: [CurlTransfer]
    /// The last `GET /metrics` (Prometheus text), and how many were made.
    var metrics: String
    var scrapes: Int

    var http: [HTTPRecord] { records.compactMap { if case .http(let r) = $0 { r } else { nil } } }
    var dns: [DNSRecord] { records.compactMap { if case .dns(let r) = $0 { r } else { nil } } }
    var connections: [ConnectionRecord] {
      records.compactMap { if case .connection(let r) = $0 { r } else { nil } }
    }
    var clientConnectionIDs: Set<UInt64> { Set(connections.filter { $0.role == .client }.map(\.id)) }

    /// The sum of a Prometheus sample over all its label sets (0 when absent).
    func metric(_ name: String) -> Double {
      metrics.split(separator: "\n").reduce(0) { sum, line in
        let sample = line.split(separator: " ")
        guard sample.count == 2, sample[0] == name || sample[0].hasPrefix(name + "{") else { return sum }
        return sum + (Double(sample[1]) ?? .nan)
      }
    }
  }

  /// One connection as `counting_upstream.py` reported it (bytes on its socket).
  struct UpstreamConnection: Decodable {
    var received: UInt64
    var sent: UInt64
    var requests: [Int]
    var responses: [Int]
  }

  /// One transfer as curl's `--write-out` reported it.
  struct CurlTransfer {
    var invocation: Int
    var url: String
    var status: Int
    var requestBytes: UInt64
    var responseBytes: UInt64  // head and body
    var bodyBytes: UInt64
  }

  /// Starts the upstream (HTTPS with `tls`), the example pointed at it by the name `localhost` (and,
  /// with `tls`, serving HTTPS with the same certificate), sends the requests with curl, stops the example with SIGTERM and collects every account.
  private static func runExample(in scratch: TemporaryDirectory, tls: (certificate: String, key: String)?) throws -> Run {
    let executable = try builtExample.get()
    let report = scratch.file("upstream.jsonl")
    let upstream = try SpawnedProgram(
      ["/usr/bin/env", "python3", supportFile("counting_upstream.py"), "--report", report.path, "--lifetime", "300"]
        + (tls.map { ["--tls", $0.certificate, $0.key] } ?? []))
    defer { upstream.closeInput() }
    let upstreamPort = try #require(upstream.port(timeout: 20), "counting_upstream.py did not start")

    let records = scratch.file("records.jsonl")
    let scheme = tls == nil ? "http" : "https"
    var environment = [
      "UPSTREAM": "\(scheme)://localhost:\(upstreamPort)/data/\(upstreamBody)", "RECORDS": records.path,
    ]
    if let tls {
      environment["UPSTREAM_CA_FILE"] = tls.certificate
      environment["TLS_CERT_FILE"] = tls.certificate
      environment["TLS_KEY_FILE"] = tls.key
    }
    let example = try SpawnedProgram([executable, "0"], environment: environment, stderr: scratch.file("stderr"))
    let serverPort = try #require(
      example.port(timeout: 60),
      "the example did not print its port: \(scratch.contents("stderr"))")

    var curl: [CurlTransfer] = []
    let base = "\(scheme)://127.0.0.1:\(serverPort)"
    let ca = tls?.certificate
    curl += try curlTransfers([String](repeating: base + "/proxy", count: proxyRequests), invocation: 0, ca: ca)
    for invocation in 1...helloRequests {
      curl += try curlTransfers([base + "/hello"], invocation: invocation, ca: ca)
    }
    // Scrape until the backend has every outbound exchange (the recorder hands records over every
    // few milliseconds), as a Prometheus server would, a little later.
    var metrics = ""
    var scrapes = 0
    let scrapeDeadline = Date().addingTimeInterval(10)
    repeat {
      scrapes += 1
      let body = scratch.file("metrics-\(scrapes)")
      curl += try curlTransfers([base + "/metrics"], invocation: helloRequests + scrapes, body: body, ca: ca)
      metrics = scratch.contents(body.lastPathComponent)
      let seen = Run(serverPort: 0, upstreamPort: 0, records: [], upstreamConnections: [], curl: [], metrics: metrics, scrapes: 0)
      if seen.metric("http_server_request_duration_seconds_count") >= Double(proxyRequests + helloRequests + scrapes - 1) { break }
      usleep(100_000)
    } while Date() < scrapeDeadline
    #expect(curl.allSatisfy { $0.status == 200 }, "curl: \(curl)")

    let stopped = try #require(
      example.stop(with: SIGTERM, timeout: 30), "the example did not exit after SIGTERM: \(scratch.contents("stderr"))")
    #expect(stopped.status == 0 && !stopped.bySignal, "the example's exit: \(stopped); \(scratch.contents("stderr"))")

    // The upstream writes a connection's line when the example has closed it (at its shutdown).
    let expectedResponses = proxyRequests
    var connections: [UpstreamConnection] = []
    let deadline = Date().addingTimeInterval(10)
    repeat {
      connections = (try? String(contentsOf: report, encoding: .utf8))?.split(separator: "\n").compactMap {
        try? JSONDecoder().decode(UpstreamConnection.self, from: Data($0.utf8))
      } ?? []
      if connections.flatMap(\.responses).count >= expectedResponses { break }
      usleep(50_000)
    } while Date() < deadline
    usleep(200_000)  // a connection closed without a request reports a moment later, if at all
    connections = (try? String(contentsOf: report, encoding: .utf8))?.split(separator: "\n").compactMap {
      try? JSONDecoder().decode(UpstreamConnection.self, from: Data($0.utf8))
    } ?? []

    let lines = try String(contentsOf: records, encoding: .utf8).split(separator: "\n")
    return Run(
      serverPort: serverPort, upstreamPort: upstreamPort,
      records: try lines.map { try Transaction(jsonLine: String($0)) },
      upstreamConnections: connections, curl: curl, metrics: metrics, scrapes: scrapes)
  }

  /// Runs one curl for `urls` (one connection, kept alive between them); a transfer per URL.
  /// (`body`: where the last URL's body goes; `ca`: the certificate an HTTPS server is trusted by.)
  private static func curlTransfers(
    _ urls: [String], invocation: Int, body: URL? = nil, ca: String? = nil
  ) throws -> [CurlTransfer] {
    let format = "%{url_effective} %{http_code} %{size_request} %{size_header} %{size_download}\\n"
    let outputs = Array(repeating: "/dev/null", count: urls.count - 1) + [body?.path ?? "/dev/null"]
    let arguments = ["curl", "-sS", "--max-time", "30"] + (ca.map { ["--cacert", $0] } ?? []) + zip(urls, outputs).flatMap { ["-o", $1, "-w", format, $0] }
    let run = try ProgramRun.run(arguments, timeout: 60)
    try #require(run.status == 0, "curl failed: \(run.stderr)")
    return String(decoding: run.stdout, as: UTF8.self).split(separator: "\n").map { line in
      let fields = line.split(separator: " ").map(String.init)
      let numbers = fields.dropFirst().map { UInt64($0) ?? 0 }
      return CurlTransfer(
        invocation: invocation, url: fields[0], status: Int(numbers[0]), requestBytes: numbers[1],
        responseBytes: numbers[2] + numbers[3], bodyBytes: numbers[3])
    }
  }

  // MARK: Building the example

  static let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent()
  static let exampleDirectory = packageRoot.appendingPathComponent("examples/swift-server")
  /// A cold build (Hummingbird, AsyncHTTPClient, swift-nio-ssl's BoringSSL…) takes minutes on two cores.
  static let buildTimeout: TimeInterval = 40 * 60

  struct BuildFailure: Error, CustomStringConvertible {
    var description: String
  }

  /// The example's executable, built once per test run by `swift build --package-path examples/swift-server`.
  static let builtExample: Result<String, BuildFailure> = {
    let command = ["swift", "build", "--package-path", exampleDirectory.path]
    let started = Date()
    do {
      let build = try ProgramRun.run(command, timeout: buildTimeout)
      guard build.status == 0 else {
        let output = (String(decoding: build.stdout, as: UTF8.self) + build.stderr).split(separator: "\n")
        return .failure(
          BuildFailure(
            description: "`\(command.joined(separator: " "))` failed (status \(build.status)); its last lines:\n"
              + output.suffix(40).joined(separator: "\n")))
      }
      let binPath = try ProgramRun.run(command + ["--show-bin-path"], timeout: 120)
      let directory = String(decoding: binPath.stdout, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
      let executable = directory + "/swift-server-example"
      guard FileManager.default.isExecutableFile(atPath: executable) else {
        return .failure(BuildFailure(description: "the example built, but \(executable) is missing"))
      }
      print("examples/swift-server built in \(Int(Date().timeIntervalSince(started))) s")
      return .success(executable)
    } catch {
      return .failure(
        BuildFailure(
          description: "`\(command.joined(separator: " "))`: \(error) (a cold build of Hummingbird and "
            + "AsyncHTTPClient takes several minutes; the limit is \(Int(buildTimeout / 60)) min)"))
    }
  }()

  // MARK: Helpers

  private static func supportFile(_ name: String) -> String {
    URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Support/" + name).path
  }

  private static func sorted(_ pairs: [[UInt64]]) -> [[UInt64]] {
    pairs.sorted { $0.lexicographicallyPrecedes($1) }
  }
}
