import Foundation
import Testing
import TestSupport

@testable import NetMonitor

/// The TLS stacks besides a shared libssl, each with a real program under `elfhook run` against
/// a local HTTPS server: GnuTLS (wget, through GOT slots), OpenSSL linked into `node` (exported in
/// its .dynsym; inline hooks; memory BIOs joined to their socket by thread) as client and as
/// server, python's asyncio (memory BIOs over the shared libssl), libcurl's NSS flavour (GOT
/// slots of NSS and NSPR), and OpenSSL linked into a C program (in its .symtab only). Each must give one account
/// of TLS per connection (time, version, plaintext bytes) and the HTTP inside, and leave the
/// program's output and exit status as they were.
@Suite("TLS stacks: GnuTLS, NSS, OpenSSL linked into node and into a C program, memory BIOs", .serialized)
struct TLSStackTests {
  /// A program run plain, then under `elfhook run`: the records, and both runs.
  struct Compared {
    var records: [Transaction]
    var plain: ProgramRun
    var monitored: ProgramRun
  }

  static func compare(_ command: [String], scratch: TemporaryDirectory, environment: [String: String]? = nil)
    throws -> Compared
  {
    let (elfhook, _) = try InjectionTests.products()
    let output = scratch.file("records-\(UUID().uuidString).jsonl")
    let plain = try ProgramRun.run(command, environment: environment)
    let monitored = try ProgramRun.run(
      [elfhook, "run", "--output", output.path, "--"] + command, environment: environment)
    return Compared(records: try InjectionTests.records(in: output), plain: plain, monitored: monitored)
  }

  /// The checks every stack's client must pass: one http record for `target` with status 200 on
  /// one connection whose TLS has a time, a version and plaintext counts that agree with the
  /// exchange's sizes.
  static func expectOneHTTPSExchange(_ records: [Transaction], port: UInt16, target: String, role: ConnectionRole = .client)
    throws
  {
    let connections = records.compactMap { record -> ConnectionRecord? in
      guard case .connection(let connection) = record, connection.role == role else { return nil }
      return connection
    }
    let exchanges = records.compactMap { record -> HTTPRecord? in
      guard case .http(let http) = record else { return nil }
      return http
    }
    try #require(connections.count == 1, "\(records)")
    try #require(exchanges.count == 1, "\(records)")
    let connection = connections[0]
    let exchange = exchanges[0]
    #expect(exchange.method == "GET" && exchange.target == target && exchange.status == 200, "\(exchange)")
    #expect(exchange.scheme == .https && exchange.httpProtocol == .http11 && exchange.responseComplete == true, "\(exchange)")
    #expect(exchange.host == "localhost:\(port)", "\(exchange)")
    #expect(connection.tlsVersion == "TLSv1.3" || connection.tlsVersion == "TLSv1.2", "\(connection)")
    let tlsMs = try #require(connection.tlsMs, "\(connection)")
    #expect(tlsMs > 0 && tlsMs < connection.durationMs, "\(connection)")
    #expect(connection.httpExchanges == 1, "\(connection)")
    let (sent, received) = role == .client
      ? (exchange.requestBytes, exchange.responseBytes) : (exchange.responseBytes, exchange.requestBytes)
    #expect(connection.tlsBytesSent == sent && connection.tlsBytesReceived == received, "\(connection)")
    // The socket carried ciphertext: more than the plaintext, and never parsed as HTTP.
    #expect(connection.bytesSent > sent && connection.bytesReceived > received, "\(connection)")
    #expect(exchange.tlsMs == tlsMs && exchange.tlsVersion == connection.tlsVersion, "\(exchange)")
  }

  @Test("wget (GnuTLS): one https record with method, target and status 200; TLS time, version and plaintext")
  func wget() throws {
    try #require(FileManager.default.isExecutableFile(atPath: "/usr/bin/wget"), "wget is not installed")
    let scratch = try TemporaryDirectory("tls")
    defer { scratch.remove() }
    let tls = try LoopbackServer.makeCertificate(in: scratch.url)
    let server = try LoopbackServer(tls: tls)
    let run = try Self.compare(
      ["/usr/bin/wget", "-q", "-O", "-", "--ca-certificate=" + tls.certificate, "https://localhost:\(server.port)/bytes/3000"],
      scratch: scratch)
    #expect(run.monitored.status == 0 && run.plain.status == 0, "\(run.monitored.stderr)")
    #expect(run.monitored.stdout == run.plain.stdout && run.monitored.stdout.count == 3000)
    try Self.expectOneHTTPSExchange(run.records, port: server.port, target: "/bytes/3000")
    #expect(!run.monitored.stderr.contains("cannot read"), "\(run.monitored.stderr)")
  }

  @Test("wget (GnuTLS) refusing the server's certificate after the handshake: its exit status stays wget's (5), no exchange")
  func wgetRefused() throws {
    try #require(FileManager.default.isExecutableFile(atPath: "/usr/bin/wget"), "wget is not installed")
    let scratch = try TemporaryDirectory("tls")
    defer { scratch.remove() }
    let tls = try LoopbackServer.makeCertificate(in: scratch.url)
    let server = try LoopbackServer(tls: tls)
    // No --ca-certificate: the self-signed certificate is not trusted, wget exits 5.
    let run = try Self.compare(["/usr/bin/wget", "-q", "-O", "-", "https://localhost:\(server.port)/bytes/5"], scratch: scratch)
    #expect(run.plain.status == 5 && run.monitored.status == run.plain.status, "\(run.monitored.stderr)")
    #expect(run.monitored.stdout.isEmpty)
    let connection = try #require(InjectionTests.connectionRecords(run.records, port: server.port).first)
    #expect(connection.tlsMs != nil && connection.tlsVersion != nil, "the handshake itself completed: \(connection)")
    #expect(connection.httpExchanges == 0 && connection.tlsBytesSent == 0, "\(connection)")
  }

  /// `node`: the one nodesource packages links OpenSSL in and exports its `SSL_read`… (inline
  /// hooks); Debian's own calls a shared libssl from libnode (GOT hooks). The tests pass with
  /// either; `inline` says which this one is.
  static func node() throws -> (path: String, inline: Bool) {
    let node = "/usr/bin/node"
    try #require(FileManager.default.isExecutableFile(atPath: node), "node is not installed")
    let symbols = try ProgramRun.run(["nm", "-D", "--defined-only", node])
    return (node, String(decoding: symbols.stdout, as: UTF8.self).contains(" T SSL_read\n"))
  }

  @Test("node https.get (OpenSSL linked into node, or libnode's libssl): one https record and the TLS account")
  func nodeClient() throws {
    let node = try Self.node().path
    let scratch = try TemporaryDirectory("tls")
    defer { scratch.remove() }
    let tls = try LoopbackServer.makeCertificate(in: scratch.url)
    let server = try LoopbackServer(tls: tls)
    let script = """
      const ca = require('fs').readFileSync(process.argv[1]);
      require('https').get({ host: 'localhost', port: \(server.port), path: '/bytes/3000', ca }, (r) => {
        let n = 0; r.on('data', (d) => n += d.length); r.on('end', () => console.log(r.statusCode, n));
      });
      """
    let run = try Self.compare([node, "-e", script, tls.certificate], scratch: scratch)
    #expect(run.monitored.status == 0 && run.plain.status == 0, "\(run.monitored.stderr)")
    #expect(String(decoding: run.monitored.stdout, as: UTF8.self) == "200 3000\n")
    #expect(run.monitored.stdout == run.plain.stdout)
    try Self.expectOneHTTPSExchange(run.records, port: server.port, target: "/bytes/3000")
  }

  @Test("node keep-alive: two requests on one connection, the second reused, the plaintext of both counted")
  func nodeKeepAlive() throws {
    let node = try Self.node().path
    let scratch = try TemporaryDirectory("tls")
    defer { scratch.remove() }
    let tls = try LoopbackServer.makeCertificate(in: scratch.url)
    let server = try LoopbackServer(tls: tls)
    let script = """
      const https = require('https');
      const ca = require('fs').readFileSync(process.argv[1]);
      const agent = new https.Agent({ keepAlive: true, maxSockets: 1 });
      const get = (path, next) => https.get({ host: 'localhost', port: \(server.port), path, ca, agent }, (r) => {
        let n = 0; r.on('data', (d) => n += d.length); r.on('end', () => { console.log(path, r.statusCode, n); next(); });
      });
      get('/bytes/5', () => get('/chunked/7000', () => agent.destroy()));
      """
    let run = try Self.compare([node, "-e", script, tls.certificate], scratch: scratch)
    #expect(run.monitored.status == 0, "\(run.monitored.stderr)")
    #expect(run.monitored.stdout == run.plain.stdout && !run.monitored.stdout.isEmpty)
    let exchanges = InjectionTests.httpRecords(run.records, port: server.port)
    #expect(exchanges.map(\.target) == ["/bytes/5", "/chunked/7000"], "\(run.records)")
    #expect(exchanges.map(\.status) == [200, 200])
    #expect(exchanges.map(\.reusedConnection) == [false, true])
    let connections = InjectionTests.connectionRecords(run.records, port: server.port)
    #expect(connections.count == 1 && connections.first?.httpExchanges == 2, "\(connections)")
    #expect((connections.first?.tlsBytesReceived ?? 0) > 7000)
  }

  /// HTTPS through a proxy (`https_proxy`, `curl -x`): a CONNECT answered 200, then the client's
  /// TLS to the server through the tunnel, whose plaintext is HTTP again, read from its start.
  @Test("HTTPS through a proxy's CONNECT tunnel: the CONNECT exchange, then each request inside it (OpenSSL, GnuTLS)")
  func throughProxy() throws {
    let scratch = try TemporaryDirectory("tls")
    defer { scratch.remove() }
    let tls = try LoopbackServer.makeCertificate(in: scratch.url)
    let server = try LoopbackServer(tls: tls)
    let (proxy, proxyPort) = try HTTP2Tests.connectProxy()
    defer { proxy.closeInput() }
    let base = "https://localhost:\(server.port)"
    var environment = ProcessInfo.processInfo.environment
    environment["https_proxy"] = "http://127.0.0.1:\(proxyPort)"
    for (client, paths) in [
      (["/usr/bin/curl", "-s", "--http1.1", "--cacert", tls.certificate, base + "/bytes/5", base + "/bytes/300",
        "-o", "/dev/null", "-o", "/dev/null"], ["/bytes/5", "/bytes/300"]),
      (["/usr/bin/wget", "-q", "--ca-certificate=" + tls.certificate, "-O", "/dev/null", base + "/bytes/7"], ["/bytes/7"]),
    ] {
      let run = try Self.compare(client, scratch: scratch, environment: environment)
      #expect(run.monitored.status == 0 && run.plain.status == 0, "\(client[0]): \(run.monitored.stderr)")
      let exchanges = InjectionTests.httpRecords(run.records, port: server.port)
      #expect(exchanges.map(\.target) == ["localhost:\(server.port)"] + paths, "\(client[0]): \(run.records)")
      #expect(exchanges.map(\.method) == ["CONNECT"] + paths.map { _ in "GET" })
      #expect(exchanges.map(\.scheme) == [.http] + paths.map { _ in .https })
      #expect(exchanges.allSatisfy { $0.status == 200 && $0.responseComplete == true })
      let connections = InjectionTests.connectionRecords(run.records, port: proxyPort)
      try #require(connections.count == 1, "\(client[0]): \(run.records)")
      #expect(connections[0].httpExchanges == 1 + paths.count)
      let sent = exchanges.dropFirst().reduce(0) { $0 + $1.requestBytes }
      #expect(connections[0].tlsBytesSent == sent && connections[0].tlsMs != nil, "\(connections[0])")
    }
  }

  /// Node's `fetch` (undici) writes its request from the `secureConnect` callback, which runs
  /// inside the SSL_read that ends the handshake: an SSL_write nested in an SSL_read, the
  /// application's, not the library's own.
  @Test("node fetch: the request written from inside the SSL_read that ends the handshake is read")
  func nodeFetch() throws {
    let node = try Self.node().path
    let scratch = try TemporaryDirectory("tls")
    defer { scratch.remove() }
    let tls = try LoopbackServer.makeCertificate(in: scratch.url)
    let server = try LoopbackServer(tls: tls)
    let script = """
      (async () => {
        for (const path of ['/bytes/5?i=1', '/bytes/300?i=2']) {
          const response = await fetch('https://localhost:\(server.port)' + path);
          console.log(path, response.status, (await response.arrayBuffer()).byteLength);
        }
      })();
      """
    // undici reads its CA certificates once, from the environment node started with.
    var environment = ProcessInfo.processInfo.environment
    environment["NODE_EXTRA_CA_CERTS"] = tls.certificate
    let run = try Self.compare([node, "-e", script], scratch: scratch, environment: environment)
    #expect(run.monitored.status == 0, "\(run.monitored.stderr)")
    #expect(run.monitored.stdout == run.plain.stdout && !run.monitored.stdout.isEmpty, "\(run.plain.stderr)")
    let exchanges = InjectionTests.httpRecords(run.records, port: server.port)
    #expect(exchanges.map(\.method) == ["GET", "GET"] && exchanges.map(\.status) == [200, 200], "\(run.records)")
    #expect(exchanges.map(\.target) == ["/bytes/5?i=1", "/bytes/300?i=2"])
    // Every request's plaintext counted, on whichever connection undici sent it.
    let connections = InjectionTests.connectionRecords(run.records, port: server.port)
    #expect(connections.reduce(0) { $0 + ($1.httpExchanges ?? 0) } == 2, "\(connections)")
    let sent = exchanges.reduce(0) { $0 + $1.requestBytes }
    #expect(sent > 0 && connections.reduce(0) { $0 + ($1.tlsBytesSent ?? 0) } == sent, "\(connections)")
  }

  @Test("node https server (OpenSSL linked into node, or libnode's libssl): curl's request is a server-side https record")
  func nodeServer() throws {
    let node = try Self.node().path
    let (elfhook, _) = try InjectionTests.products()
    let scratch = try TemporaryDirectory("tls")
    defer { scratch.remove() }
    let tls = try LoopbackServer.makeCertificate(in: scratch.url)
    let script = """
      const fs = require('fs');
      const server = require('https').createServer(
        { key: fs.readFileSync(process.argv[1]), cert: fs.readFileSync(process.argv[2]) }, (req, res) => {
          res.writeHead(200, { 'Content-Type': 'text/plain' });
          res.end('x'.repeat(2000));
          res.on('finish', () => server.close());
        });
      server.listen(0, '127.0.0.1', () => console.log('PORT ' + server.address().port));
      setTimeout(() => process.exit(3), 30000).unref();
      """
    let output = scratch.file("records.jsonl")
    let program = try SpawnedProgram([elfhook, "run", "--output", output.path, "--", node, "-e", script, tls.key, tls.certificate])
    let port = try #require(program.port(timeout: 20), "node printed no port")
    let fetch = try ProgramRun.run([
      "/usr/bin/curl", "-s", "--http1.1", "--cacert", tls.certificate, "https://localhost:\(port)/hello?name=node",
    ])
    #expect(fetch.status == 0 && fetch.stdout.count == 2000, "\(fetch.stderr)")
    let ended = try #require(waitForExit(program), "node did not exit after its one response")
    #expect(ended.status == 0 && !ended.bySignal)
    try Self.expectOneHTTPSExchange(
      try InjectionTests.records(in: output), port: port, target: "/hello?name=node", role: .server)
  }

  /// Waits up to 20 s for `program` to exit by itself.
  func waitForExit(_ program: SpawnedProgram) -> (status: Int32, bySignal: Bool)? {
    let deadline = Date().addingTimeInterval(20)
    while program.process.isRunning && Date() < deadline { usleep(10_000) }
    return program.process.isRunning ? nil : (program.process.terminationStatus, program.process.terminationReason == .uncaughtSignal)
  }

  @Test("python asyncio (libssl's memory BIOs, GOT hooks): the session joined to its socket by thread")
  func pythonAsyncio() throws {
    let scratch = try TemporaryDirectory("tls")
    defer { scratch.remove() }
    let tls = try LoopbackServer.makeCertificate(in: scratch.url)
    let server = try LoopbackServer(tls: tls)
    // asyncio's SSL transport: SSL_do_handshake, SSL_read and SSL_write on memory BIOs, the
    // ciphertext moved by the event loop with send/recv right after each call.
    let script = """
      import asyncio, ssl, sys
      async def main():
          context = ssl.create_default_context(cafile=sys.argv[1])
          reader, writer = await asyncio.open_connection("localhost", \(server.port), ssl=context)
          writer.write(b"GET /bytes/3000 HTTP/1.1\\r\\nHost: localhost:\(server.port)\\r\\nConnection: close\\r\\n\\r\\n")
          data = await reader.read()
          print(len(data), data.split(b"\\r\\n")[0].decode())
          writer.close()
      asyncio.run(main())
      """
    let run = try Self.compare(["python3", "-c", script, tls.certificate], scratch: scratch)
    #expect(run.monitored.status == 0 && run.plain.status == 0, "\(run.monitored.stderr)")
    #expect(run.monitored.stdout == run.plain.stdout && !run.monitored.stdout.isEmpty)
    try Self.expectOneHTTPSExchange(run.records, port: server.port, target: "/bytes/3000")
  }

  @Test("libcurl's NSS flavour (SSL_ForceHandshakeWithTimeout, PR_Send, PR_Recv): one https record and the TLS account")
  func nss() throws {
    let library = "/usr/lib/x86_64-linux-gnu/libcurl-nss.so.4"
    try #require(FileManager.default.fileExists(atPath: library), "libcurl3-nss is not installed")
    let scratch = try TemporaryDirectory("tls")
    defer { scratch.remove() }
    let source = """
      #include <curl/curl.h>
      #include <stdio.h>
      int main(int argc, char **argv) {
        if (argc != 3) return 2;
        CURL *curl = curl_easy_init();
        curl_easy_setopt(curl, CURLOPT_URL, argv[1]);
        curl_easy_setopt(curl, CURLOPT_CAINFO, argv[2]);
        CURLcode code = curl_easy_perform(curl);
        if (code != CURLE_OK) fprintf(stderr, "nss_get: %s\\n", curl_easy_strerror(code));
        curl_easy_cleanup(curl);
        return code == CURLE_OK ? 0 : 1;
      }
      """
    let file = scratch.file("nss_get.c")
    try source.write(to: file, atomically: true, encoding: .utf8)
    let client = scratch.file("nss_get")
    let build = try ProgramRun.run(["cc", "-o", client.path, file.path, "-l:libcurl-nss.so.4"])
    try #require(build.status == 0, "cc nss_get.c: \(build.stderr)")
    let tls = try LoopbackServer.makeCertificate(in: scratch.url)
    let server = try LoopbackServer(tls: tls)
    let url = "https://localhost:\(server.port)/bytes/3000"
    let run = try Self.compare([client.path, url, tls.certificate], scratch: scratch)
    #expect(run.monitored.status == 0 && run.plain.status == 0, "\(run.monitored.stderr)")
    #expect(run.monitored.stdout == run.plain.stdout && run.monitored.stdout.count == 3000)
    try Self.expectOneHTTPSExchange(run.records, port: server.port, target: "/bytes/3000")

    // Refused: the system's CAs do not know the test's certificate. NSS says why in the handshake.
    let refused = try Self.compare([client.path, url, "/etc/ssl/certs/ca-certificates.crt"], scratch: scratch)
    #expect(refused.plain.status == 1 && refused.monitored.status == 1, "\(refused.monitored.stderr)")
    let connection = try #require(InjectionTests.connectionRecords(refused.records, port: server.port).first)
    #expect(connection.error?.call == "SSL_ForceHandshake", "\(connection)")
    #expect(connection.error?.code.hasPrefix("SEC_ERROR_") == true, "\(connection)")
    #expect(connection.httpExchanges == 0)
  }

  /// Support/tls_get.c linked with libssl.a and libcrypto.a (`stripped`: without a .symtab).
  static func staticTLSClient(in scratch: TemporaryDirectory, stripped: Bool) throws -> URL {
    let archives = ["/usr/lib/x86_64-linux-gnu/libssl.a", "/usr/lib/x86_64-linux-gnu/libcrypto.a"]
    try #require(archives.allSatisfy { FileManager.default.fileExists(atPath: $0) }, "libssl-dev's static archives are missing")
    let source = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Support/tls_get.c")
    let binary = scratch.file(stripped ? "tls_get_stripped" : "tls_get")
    let build = try ProgramRun.run(
      ["cc", "-O1"] + (stripped ? ["-s"] : []) + ["-o", binary.path, source.path] + archives + ["-lpthread"])
    try #require(build.status == 0, "cc tls_get.c: \(build.stderr)")
    return binary
  }

  @Test("a C program with OpenSSL linked in, found in its .symtab: one https record and the TLS account")
  func staticOpenSSL() throws {
    let scratch = try TemporaryDirectory("tls")
    defer { scratch.remove() }
    let client = try Self.staticTLSClient(in: scratch, stripped: false)
    let tls = try LoopbackServer.makeCertificate(in: scratch.url)
    let server = try LoopbackServer(tls: tls)
    let run = try Self.compare([client.path, "\(server.port)", "/bytes/3000", tls.certificate], scratch: scratch)
    #expect(run.monitored.status == 0 && run.plain.status == 0, "\(run.monitored.stderr)")
    let body = "\r\n\r\n" + String(repeating: "x", count: 3000)
    #expect(String(decoding: run.monitored.stdout, as: UTF8.self).hasSuffix(body))
    #expect(String(decoding: run.plain.stdout, as: UTF8.self).hasSuffix(body))
    try Self.expectOneHTTPSExchange(run.records, port: server.port, target: "/bytes/3000")
  }
}
