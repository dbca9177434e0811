import Foundation
import Testing
import TestSupport

@testable import NetMonitor

/// HTTP/2 read from real programs' bytes under `elfhook run`: one http record per stream, as
/// client and as server, over TLS (ALPN h2), with prior knowledge and after an h2c upgrade;
/// multiplexed streams, gRPC calls, and a server that resets, refuses, pads and sends header
/// lists over CONTINUATION frames.
@Suite("HTTP/2", .serialized)
struct HTTP2Tests {
  /// The records of `command` run under `elfhook run`, and its exit status.
  static func run(_ command: [String]) throws -> (status: Int32, records: [Transaction], stderr: String) {
    let (elfhook, _) = try InjectionTests.products()
    let scratch = try TemporaryDirectory("injection")
    defer { scratch.remove() }
    let output = scratch.file("records.jsonl")
    let run = try ProgramRun.run([elfhook, "run", "--output", output.path, "--"] + command)
    return (run.status, try InjectionTests.records(in: output), run.stderr)
  }

  static func http(_ records: [Transaction]) -> [HTTPRecord] {
    records.compactMap { if case .http(let record) = $0 { record } else { nil } }
  }

  static func connections(_ records: [Transaction]) -> [ConnectionRecord] {
    records.compactMap { if case .connection(let record) = $0 { record } else { nil } }
  }

  static let files = ["2k": 2000, "100k": 100_000]

  @Test("curl --parallel over TLS (ALPN h2): one h2 record per stream, 20 streams multiplexed on one connection")
  func multiplexed() throws {
    let scratch = try TemporaryDirectory("injection")
    defer { scratch.remove() }
    let tls = try LoopbackServer.makeCertificate(in: scratch.url)
    let server = try LoopbackNginx(files: Self.files, tls: tls, http2: true)
    var command = ["/usr/bin/curl", "-s", "--cacert", tls.certificate, "--parallel", "--parallel-max", "20"]
    for index in 0..<20 {
      command += ["https://localhost:\(server.tlsPort)/\(index % 2 == 0 ? "2k" : "100k")?i=\(index)", "-o", "/dev/null"]
    }
    let (status, records, stderr) = try Self.run(command)
    #expect(status == 0, "\(stderr)")
    let connections = Self.connections(records)
    try #require(connections.count == 1, "\(connections)")
    let streams = Self.http(records).sorted { $0.streamId ?? 0 < $1.streamId ?? 0 }
    #expect(streams.count == 20)
    #expect(connections[0].httpExchanges == 20 && connections[0].httpError == nil)
    let expectedIDs: [UInt32?] = (0..<20).map { (index: Int) -> UInt32? in UInt32(2 * index + 1) }
    #expect(streams.map(\.streamId) == expectedIDs)
    #expect(streams.allSatisfy { $0.httpProtocol == .h2 && $0.status == 200 && $0.method == "GET" && $0.scheme == .https })
    #expect(streams.allSatisfy { $0.host == "localhost:\(server.tlsPort)" && $0.responseComplete == true })
    #expect(Set(streams.map(\.target)) == Set((0..<20).map { "/\($0 % 2 == 0 ? "2k" : "100k")?i=\($0)" }))
    #expect(streams.filter { !$0.reusedConnection }.count == 1)
    // A stream's response bytes are its frames': HEADERS plus the body in DATA frames of ≤ 16 KiB.
    for stream in streams {
      let body: UInt64 = stream.target.hasPrefix("/2k") ? 2000 : 100_000
      let framing: UInt64 = 9 * ((body + 16383) / 16384 + 1)  // the DATA frames' headers and the HEADERS frame's
      let bytes = stream.responseBytes
      #expect(bytes > body + framing && bytes < body + framing + 200)
      #expect(stream.ttfbMs != nil && stream.ttfbMs! <= stream.durationMs)
    }
    // Every plaintext byte of the connection is some stream's frames' or the connection's own
    // (SETTINGS, WINDOW_UPDATE, PING): the streams' are nearly all, and no more than all.
    let received = streams.map(\.responseBytes).reduce(0, +)
    let plaintext = connections[0].tlsBytesReceived ?? 0
    #expect(received <= plaintext && received > plaintext - 200)
  }

  @Test("curl with prior knowledge (cleartext h2): its stream, and the connection's bytes are the frames'")
  func priorKnowledge() throws {
    let scratch = try TemporaryDirectory("injection")
    defer { scratch.remove() }
    let server = try LoopbackNginx(files: Self.files, tls: try LoopbackServer.makeCertificate(in: scratch.url), http2: true)
    // A name curl resolves itself (--resolve: no lookup to record): the connection is named by its
    // first stream's :authority, whose :path curl sends as a Huffman code.
    let (status, records, stderr) = try Self.run([
      "/usr/bin/curl", "-s", "-f", "--http2-prior-knowledge", "--resolve", "h2.example:\(server.h2cPort):127.0.0.1",
      "http://h2.example:\(server.h2cPort)/100k?q=1", "-o", "/dev/null",
    ])
    #expect(status == 0, "\(stderr)")
    let stream = try #require(Self.http(records).first)
    let connection = try #require(Self.connections(records).first)
    #expect(stream.httpProtocol == .h2 && stream.streamId == 1 && stream.status == 200 && stream.target == "/100k?q=1")
    #expect(connection.host == "h2.example" && stream.host == "h2.example:\(server.h2cPort)")
    #expect(stream.scheme == .http && !stream.reusedConnection && stream.connectMs != nil)
    #expect(connection.httpExchanges == 1 && connection.tlsALPN == nil)
    // The preface (24) and the client's SETTINGS and WINDOW_UPDATE are the connection's, not the stream's.
    #expect(stream.requestBytes > 9 && stream.requestBytes < connection.bytesSent - 24)
    #expect(stream.responseBytes > 100_000 && stream.responseBytes < connection.bytesReceived)
  }

  @Test("curl over TLS with ALPN h2: the streams' records, https, and the connection says h2")
  func tlsALPN() throws {
    let scratch = try TemporaryDirectory("injection")
    defer { scratch.remove() }
    let tls = try LoopbackServer.makeCertificate(in: scratch.url)
    let server = try LoopbackNginx(files: Self.files, tls: tls, http2: true)
    let url = "https://localhost:\(server.tlsPort)"
    let (status, records, stderr) = try Self.run([
      "/usr/bin/curl", "-s", "--cacert", tls.certificate, "\(url)/2k", "-o", "/dev/null", "\(url)/missing", "-o",
      "/dev/null",
    ])
    #expect(status == 0, "\(stderr)")
    let connection = try #require(Self.connections(records).first)
    #expect(connection.tlsALPN == "h2" && connection.httpExchanges == 2)
    let streams = Self.http(records).sorted { $0.streamId ?? 0 < $1.streamId ?? 0 }
    #expect(streams.map(\.streamId) == [1, 3] as [UInt32?])
    #expect(streams.map(\.status) == [200, 404] as [Int?])
    #expect(streams.map(\.target) == ["/2k", "/missing"])
    #expect(streams.allSatisfy { $0.scheme == .https && $0.httpProtocol == .h2 && $0.tlsVersion != nil })
    #expect(streams[0].tlsMs != nil && streams[1].tlsMs == nil, "the setup goes with the first stream")
    #expect(!stderr.contains("not read"), "\(stderr)")
  }

  @Test("nghttp: its streams (after its priority anchors) are recorded, and nothing for the anchors")
  func nghttp() throws {
    try #require(FileManager.default.isExecutableFile(atPath: "/usr/bin/nghttp"), "nghttp2-client is installed")
    let scratch = try TemporaryDirectory("injection")
    defer { scratch.remove() }
    let server = try LoopbackNginx(files: Self.files, tls: try LoopbackServer.makeCertificate(in: scratch.url), http2: true)
    let base = "http://127.0.0.1:\(server.h2cPort)"
    let (status, records, stderr) = try Self.run(["/usr/bin/nghttp", "-n", "\(base)/2k", "\(base)/100k", "\(base)/none"])
    #expect(status == 0, "\(stderr)")
    let streams = Self.http(records).sorted { $0.streamId ?? 0 < $1.streamId ?? 0 }
    #expect(streams.map(\.target) == ["/2k", "/100k", "/none"])
    #expect(streams.map(\.status) == [200, 200, 404] as [Int?])
    #expect(streams.allSatisfy { ($0.streamId ?? 0) >= 13 }, "nghttp opens streams 3–11 with PRIORITY only")
    #expect(Self.connections(records).first?.httpExchanges == 3)
  }

  @Test("nginx serving h2 while monitored: server-role records, cleartext and TLS")
  func nginxServer() throws {
    let (elfhook, _) = try InjectionTests.products()
    let scratch = try TemporaryDirectory("injection")
    defer { scratch.remove() }
    let tls = try LoopbackServer.makeCertificate(in: scratch.url)
    let output = scratch.file("nginx.jsonl")
    let server = try LoopbackNginx(
      files: Self.files, tls: tls, http2: true, launcher: [elfhook, "run", "--output", output.path, "--"])
    // Two streams on each connection: nghttp for cleartext (curl 7.88 cannot reuse a prior-knowledge
    // connection with nginx: exit 16, monitored or not), curl over TLS.
    let h2c = "http://127.0.0.1:\(server.h2cPort)/2k"
    let nghttp = try ProgramRun.run(["/usr/bin/nghttp", "-n", h2c, h2c + "?again"])  // it asks for a URL once
    #expect(nghttp.status == 0, "\(nghttp.stderr)")
    let https = "https://localhost:\(server.tlsPort)/100k"
    let curl = try ProgramRun.run([
      "/usr/bin/curl", "-s", "-f", "--cacert", tls.certificate, https, https, "-o", "/dev/null", "-o", "/dev/null",
    ])
    #expect(curl.status == 0, "\(curl.stderr)")
    let deadline = Date().addingTimeInterval(10)
    var streams: [HTTPRecord] = []
    while Date() < deadline {  // the records come as nginx's connections close
      streams = Self.http((try? InjectionTests.records(in: output)) ?? [])
      if streams.count >= 4 { break }
      usleep(50_000)
    }
    server.stop()
    streams = Self.http(try InjectionTests.records(in: output)).sorted { $0.startUnixNs < $1.startUnixNs }
    try #require(streams.count == 4, "\(streams)")
    #expect(streams.allSatisfy { $0.role == .server && $0.httpProtocol == .h2 && $0.status == 200 })
    #expect(streams.map(\.target) == ["/2k", "/2k?again", "/100k", "/100k"])
    #expect(streams.map(\.scheme) == [.http, .http, .https, .https])
    #expect(streams.map(\.streamId) == [13, 15, 1, 3] as [UInt32?], "nghttp's first stream is 13")
    #expect(streams.map(\.reusedConnection) == [false, true, false, true])
    #expect(streams[2].responseBytes > 100_000)
  }

  /// `h2_server.py` (the `h2` package), started for one test.
  static func pythonServer() throws -> (server: SpawnedProgram, port: UInt16) {
    let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Support/h2_server.py")
    let server = try SpawnedProgram(["/usr/bin/env", "python3", script.path])
    let port = try #require(server.port(timeout: 10), "h2_server.py starts (python3 with the h2 package)")
    return (server, port)
  }

  /// `connect_proxy.py`: an HTTP proxy that answers CONNECT (to 127.0.0.1 only), started for one test.
  static func connectProxy() throws -> (proxy: SpawnedProgram, port: UInt16) {
    let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Support/connect_proxy.py")
    let proxy = try SpawnedProgram(["/usr/bin/env", "python3", script.path])
    let port = try #require(proxy.port(timeout: 10), "connect_proxy.py printed no port")
    return (proxy, port)
  }

  @Test("plaintext through a proxy's CONNECT tunnel: HTTP/2 (stream 1 the client's own, not the CONNECT) and HTTP/1.1")
  func throughProxyTunnel() throws {
    let (server, port) = try Self.pythonServer()
    defer { server.closeInput() }
    let (proxy, proxyPort) = try Self.connectProxy()
    defer { proxy.closeInput() }
    let (status, records, stderr) = try Self.run([
      "/usr/bin/curl", "-s", "-f", "--proxytunnel", "-x", "http://127.0.0.1:\(proxyPort)", "--http2-prior-knowledge",
      "http://127.0.0.1:\(port)/tunnel?size=50", "-o", "/dev/null",
    ])
    #expect(status == 0, "\(stderr)")
    let exchanges = Self.http(records).sorted { $0.startUnixNs < $1.startUnixNs }
    try #require(exchanges.count == 2, "\(exchanges)")
    #expect(exchanges[0].method == "CONNECT" && exchanges[0].status == 200 && exchanges[0].httpProtocol == .http11)
    #expect(exchanges[1].httpProtocol == .h2 && exchanges[1].streamId == 1 && exchanges[1].method == "GET")
    #expect(exchanges[1].target == "/tunnel?size=50" && exchanges[1].status == 200 && exchanges[1].responseComplete == true)
    #expect(Self.connections(records).first?.httpExchanges == 2)

    // HTTP/1.1 (`--proxytunnel` on an http:// URL): the client's own exchanges, read afresh.
    let origin = try LoopbackServer()
    let base = "http://127.0.0.1:\(origin.port)"
    let plain = try Self.run([
      "/usr/bin/curl", "-s", "-f", "--proxytunnel", "-x", "http://127.0.0.1:\(proxyPort)",
      base + "/bytes/5", base + "/bytes/300", "-o", "/dev/null", "-o", "/dev/null",
    ])
    #expect(plain.status == 0, "\(plain.stderr)")
    let http1 = Self.http(plain.records).sorted { $0.startUnixNs < $1.startUnixNs }
    #expect(http1.map(\.method) == ["CONNECT", "GET", "GET"], "\(http1)")
    #expect(http1.map(\.target) == ["127.0.0.1:\(origin.port)", "/bytes/5", "/bytes/300"])
    #expect(http1.allSatisfy { $0.status == 200 && $0.responseComplete == true && $0.httpProtocol == .http11 })
    #expect(http1.map(\.reusedConnection) == [false, false, true])
    #expect(Self.connections(plain.records).first?.httpExchanges == 3)
  }

  @Test("curl --http2 on http://: the Upgrade: h2c request is its 101 exchange and stream 1's request")
  func h2cUpgrade() throws {
    let (server, port) = try Self.pythonServer()
    defer { server.closeInput() }
    let (status, records, stderr) = try Self.run([
      "/usr/bin/curl", "-s", "-f", "--http2", "http://127.0.0.1:\(port)/up?size=500", "-o", "/dev/null",
    ])
    #expect(status == 0, "\(stderr)")
    let exchanges = Self.http(records).sorted { $0.startUnixNs < $1.startUnixNs }
    try #require(exchanges.count == 2, "\(exchanges)")
    #expect(exchanges[0].httpProtocol == .http11 && exchanges[0].status == 101)
    #expect(exchanges[1].httpProtocol == .h2 && exchanges[1].streamId == 1 && exchanges[1].status == 200)
    #expect(exchanges[1].method == "GET" && exchanges[1].target == "/up?size=500" && exchanges[1].reusedConnection)
    #expect(exchanges[1].responseBytes > 500 && exchanges[1].responseComplete == true)
    #expect(Self.connections(records).first?.httpExchanges == 2)
  }

  /// Java's HttpClient asks for h2c with an upgrade whose HTTP2-Settings announce a 16 KiB header
  /// table (the server's encoder resizes to it in its first block), sends on one thread and reads
  /// on another (the 101 is often read before the request's hook ran: `SplitThreadClientTests`
  /// makes that certain), then multiplexes eight streams and posts.
  @Test("node's http2 client and server in one process: 400 streams in flight on one connection, each recorded by both sides")
  func manyStreamsInFlight() throws {
    let node = try TLSStackTests.node().path
    // The server answers no stream until all 400 are open: the connection's own 128 stream slots
    // and three borrowed tables hold them.
    let script = """
      const http2 = require('http2');
      const count = 400, waiting = [];
      const server = http2.createServer();
      server.on('stream', (stream, headers) => {
        waiting.push([stream, headers[':path']]);
        if (waiting.length < count) return;
        for (const [s, path] of waiting) { s.respond({ ':status': 200 }); s.end(path); }
      });
      server.listen(0, '127.0.0.1', async () => {
        const client = http2.connect('http://127.0.0.1:' + server.address().port);
        const get = (i) => new Promise((resolve, reject) => {
          const request = client.request({ ':path': '/s/' + i });
          let body = ''; request.on('data', (d) => body += d); request.on('end', () => resolve(body));
          request.on('error', reject); request.end();
        });
        const bodies = await Promise.all([...Array(count).keys()].map(get));
        console.log(bodies.filter((body, i) => body === '/s/' + i).length);
        client.close(); server.close();
      });
      """
    let (status, records, stderr) = try Self.run([node, "-e", script])
    #expect(status == 0, "\(stderr)")
    let paths = Set((0..<400).map { "/s/\($0)" })
    for role in [ConnectionRole.client, .server] {
      let streams = Self.http(records).filter { $0.role == role }
      #expect(streams.count == 400 && Set(streams.map(\.target)) == paths, "\(role): \(streams.count)")
      #expect(Set(streams.compactMap(\.streamId)).count == 400)
      #expect(streams.allSatisfy { $0.httpProtocol == .h2 && $0.status == 200 && $0.responseComplete == true })
      let connection = Self.connections(records).filter { $0.role == role }
      #expect(connection.count == 1 && connection.first?.httpExchanges == 400 && connection.first?.httpError == nil)
    }
  }

  @Test("Java's HttpClient over h2c: the upgrade's 101 exchange, then one record per stream")
  func javaUpgrade() throws {
    let (server, port) = try Self.pythonServer()
    defer { server.closeInput() }
    let source = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Support/H2cClient.java")
    let (status, records, stderr) = try Self.run(["/usr/bin/java", source.path, "http://127.0.0.1:\(port)"])
    #expect(status == 0, "\(stderr)")
    let exchanges = Self.http(records).sorted { ($0.streamId ?? 0, $0.startUnixNs) < ($1.streamId ?? 0, $1.startUnixNs) }
    let paths = ["/first?size=10"] + (0..<8).map { "/c\($0)?size=\(100 + $0)" } + ["/post?size=3"]
    try #require(exchanges.count == 11, "\(exchanges)")
    #expect(exchanges[0].httpProtocol == .http11 && exchanges[0].status == 101 && exchanges[0].target == paths[0])
    let streams = Array(exchanges.dropFirst())
    let odd: [UInt32?] = (0..<10).map { UInt32(2 * $0 + 1) }
    #expect(streams.map(\.streamId) == odd)
    #expect(Set(streams.map(\.target)) == Set(paths) && streams[0].target == paths[0])
    #expect(streams.allSatisfy { $0.httpProtocol == .h2 && $0.status == 200 && $0.responseComplete == true })
    let methods = Array(repeating: "GET", count: 9) + ["POST"]
    #expect(streams.map(\.method) == methods)
    let connection = Self.connections(records).first
    #expect(connection?.httpExchanges == 11 && connection?.httpError == nil)
  }

  @Test("a stream reset, padded DATA, and a 20 KB header list over HEADERS and CONTINUATION")
  func misbehavingServer() throws {
    let (server, port) = try Self.pythonServer()
    defer { server.closeInput() }
    let base = "http://127.0.0.1:\(port)"
    func streams(_ paths: [String], parallel: Bool = false) throws -> [HTTPRecord] {
      var command = ["/usr/bin/curl", "-s", "--http2-prior-knowledge"] + (parallel ? ["--parallel"] : [])
      for path in paths { command += [base + path, "-o", "/dev/null"] }
      return Self.http(try Self.run(command).records).sorted { $0.streamId ?? 0 < $1.streamId ?? 0 }
    }
    let reset = try streams(["/reset"])
    #expect(reset.count == 1 && reset[0].status == nil && reset[0].responseComplete == false && reset[0].target == "/reset")
    let padded = try streams(["/padded?size=300"])
    #expect(padded.count == 1 && padded[0].status == 200 && padded[0].responseComplete == true)
    #expect(padded.first.map { $0.responseBytes > 300 + 20 } == true, "padding counts as the stream's frame bytes")
    let big = try streams(["/big"])
    #expect(big.count == 1 && big[0].status == 200 && big[0].responseComplete == true && big[0].responseBytes > 18_000)
  }

  /// `h2_client.py` (the `h2` package) under `elfhook run` against `h2_server.py`: the records.
  static func pythonClient(_ port: UInt16, _ arguments: [String]) throws -> [Transaction] {
    let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Support/h2_client.py")
    let (status, records, stderr) = try Self.run(["/usr/bin/env", "python3", script.path, String(port)] + arguments)
    #expect(status == 0, "\(stderr)")
    return records
  }

  @Test("a GOAWAY refuses a stream opened with the one it answers: that stream has no response")
  func goaway() throws {
    let (server, port) = try Self.pythonServer()
    defer { server.closeInput() }
    let records = try Self.pythonClient(port, ["/goaway", "/after"])
    let streams = Self.http(records).sorted { $0.streamId ?? 0 < $1.streamId ?? 0 }
    #expect(streams.map(\.target) == ["/goaway", "/after"])
    #expect(streams.map(\.status) == [200, nil] as [Int?])
    #expect(streams.map(\.responseComplete) == [true, false] as [Bool?])
    #expect(Self.connections(records).first?.httpExchanges == 2)
  }

  @Test("a malformed frame stops the reading of its direction: the streams before it recorded, the connection says why")
  func malformedFrame() throws {
    let (server, port) = try Self.pythonServer()
    defer { server.closeInput() }
    for bytewise in [false, true] {
      let records = try Self.pythonClient(port, (bytewise ? ["--bytewise"] : []) + ["--malformed", "/a", "/b?size=700"])
      let streams = Self.http(records).sorted { $0.streamId ?? 0 < $1.streamId ?? 0 }
      // The request after the bad frame opens no stream the monitor reads: it is not recorded.
      #expect(streams.map(\.target) == ["/a", "/b?size=700"], "bytewise: \(bytewise)")
      #expect(streams.map(\.status) == [200, 200] as [Int?] && streams.allSatisfy { $0.responseComplete == true })
      let connection = Self.connections(records).first
      #expect(connection?.httpError == "HTTP/2: bad frame", "bytewise: \(bytewise)")
      #expect(connection?.httpExchanges == 2)
    }
  }

  @Test("one byte per system call gives the records whole writes give; a table resized to 0 too")
  func splitsAndTableSize() throws {
    let (server, port) = try Self.pythonServer()
    defer { server.closeInput() }
    let paths = ["/a?size=3000", "/b", "/c?size=12000"]  // one DATA frame each (h2_server.py)
    func summary(_ records: [Transaction]) -> [String] {
      Self.http(records).sorted { $0.streamId ?? 0 < $1.streamId ?? 0 }.map {
        "\($0.streamId ?? 0) \($0.method) \($0.target) \($0.host ?? "-") \($0.status ?? 0) \($0.requestBytes) "
          + "\($0.responseBytes) \($0.responseComplete ?? false) \($0.reusedConnection)"
      }
    }
    let whole = summary(try Self.pythonClient(port, paths))
    #expect(whole.count == 3 && whole.allSatisfy { $0.contains(" 200 ") }, "\(whole)")
    #expect(summary(try Self.pythonClient(port, ["--bytewise"] + paths)) == whole)
    // SETTINGS_HEADER_TABLE_SIZE 0: the server's encoder sends a size update to 0 and indexes
    // nothing; the request bytes differ (the client's SETTINGS frame is longer), not the streams'.
    let noTable = try Self.pythonClient(port, ["--no-table"] + paths)
    #expect(summary(noTable).map { $0.split(separator: " ").prefix(5) } == whole.map { $0.split(separator: " ").prefix(5) })
    #expect(Self.connections(noTable).first?.httpError == nil)
  }

  @Test("gRPC client and server in one process: unary, server-streaming, a failing call and a cancelled one")
  func grpc() throws {
    let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Support/grpc_calls.py")
    let check = try ProgramRun.run(["/usr/bin/env", "python3", "-c", "import grpc"])
    try #require(check.status == 0, "python3 has grpcio (scripts/install-dependencies)")
    let (status, records, stderr) = try Self.run(["/usr/bin/env", "python3", script.path])
    #expect(status == 0, "\(stderr)")
    for role in [ConnectionRole.client, .server] {
      let calls = Self.http(records).filter { $0.role == role }.sorted { $0.streamId ?? 0 < $1.streamId ?? 0 }
      let targets = ["Unary", "Unary", "Fail", "Stream", "Hold"].map { "/test.Echo/" + $0 }
      #expect(calls.map(\.target) == targets)
      // The cancelled call has no trailers: its RST_STREAM (CANCEL) says CANCELLED, as gRPC has it.
      #expect(calls.map(\.grpcStatus) == [0, 0, 5, 0, 1] as [Int?])
      #expect(calls.map(\.grpcMessage) == [nil, nil, "no such thing", nil, nil])
      #expect(calls.allSatisfy { $0.method == "POST" && $0.httpProtocol == .h2 })
      #expect(calls.dropLast().allSatisfy { $0.status == 200 && $0.responseComplete == true })
      #expect(calls.last?.status == nil && calls.last?.responseComplete == false)
      #expect(calls.map(\.streamId) == [1, 3, 5, 7, 9] as [UInt32?])
    }
    #expect(stderr.contains("gRPC"), "the summary names the calls by service and method: \(stderr)")
  }
}
