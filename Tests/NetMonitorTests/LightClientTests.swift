import Foundation
import Testing
import TestSupport

@testable import NetMonitor

/// Light clients (CShims/CElfHookPreload/clients.c): a plaintext HTTP/1.x client's connections and
/// simple exchanges are recorded by the injected library itself, and the monitor, loaded only when
/// a call needs it, takes the connections over where they are. Each program here runs twice under
/// `elfhook run`, with light clients and without (`ELFHOOK_LIGHT_CLIENTS=0`: the monitor loaded at
/// the first connect): the records must be the same, field for field, but for the times.
@Suite("Light clients", .serialized)
struct LightClientTests {
  /// What differs from run to run: times (compared by whether there is one) and the pid.
  private static let volatile: Set<String> = [
    "pid", "start_unix_ns", "duration_ms", "ttfb_ms", "connect_ms", "dns_ms", "tls_ms",
  ]

  /// The records of `command` under `elfhook run`, light clients on or off, each a JSON object
  /// with its volatile fields reduced, in the order written; and whether the monitor was loaded
  /// (`ELFHOOK_LOG=info` has it say where it records).
  private static func records(
    of command: [String], light: Bool, in scratch: TemporaryDirectory, alsoVolatile: Set<String> = []
  ) throws -> (records: [NSDictionary], monitorLoaded: Bool, status: Int32, output: String, stderr: String) {
    let volatile = Self.volatile.union(alsoVolatile)
    let (elfhook, _) = try InjectionTests.products()
    let output = scratch.file("records-\(light).jsonl")
    let run = try ProgramRun.run(
      ["/usr/bin/env", "ELFHOOK_LIGHT_CLIENTS=\(light ? 1 : 0)", "ELFHOOK_LOG=info", elfhook, "run", "--output",
       output.path, "--"] + command)
    let lines = try String(contentsOf: output, encoding: .utf8).split(separator: "\n")
    let records = try lines.map { line in
      let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
      // A time is compared by whether there is one.
      return NSDictionary(dictionary: object.reduce(into: [String: Any]()) { kept, field in
        kept[field.key] = volatile.contains(field.key) ? (field.value is NSNull ? "none" : "some") : field.value
      })
    }
    let loaded = run.stderr.contains("elfhook: recording")
    return (records, loaded, run.status, run.stdoutText, run.stderr)
  }

  /// Runs `command` both ways and expects the same records (in the same order, or, from several
  /// processes, `inAnyOrder`); returns them, whether the light run loaded the monitor, and that
  /// run's output and stderr. Fields in `alsoVolatile` are compared as times are; with
  /// `hpackDates` (nginx's HTTP/2 answers), received byte counts as `allowingDates` says.
  @discardableResult
  private static func expectSameRecords(
    _ command: [String], in scratch: TemporaryDirectory, inAnyOrder: Bool = false, alsoVolatile: Set<String> = [],
    hpackDates: Bool = false
  ) throws -> (records: [NSDictionary], monitorLoaded: Bool, output: String, stderr: String) {
    let light = try records(of: command, light: true, in: scratch, alsoVolatile: alsoVolatile)
    let monitor = try records(of: command, light: false, in: scratch, alsoVolatile: alsoVolatile)
    #expect(light.status == 0 && monitor.status == 0)
    #expect(monitor.monitorLoaded, "without light clients, the first connect loads the monitor")
    #expect(light.records.count == monitor.records.count, "\(light.records) against \(monitor.records)")
    let order = { (records: [NSDictionary]) in inAnyOrder ? try records.sorted { try canonical($0) < canonical($1) } : records }
    for (mine, theirs) in zip(try order(light.records), try order(monitor.records)) {
      let theirs = hpackDates ? allowingDates(theirs, as: mine) : theirs
      #expect(mine == theirs, "light: \(mine)\nmonitor: \(theirs)")
    }
    return (light.records, light.monitorLoaded, light.output, light.stderr)
  }

  /// nginx's HTTP/2 answers carry its Date Huffman-coded (RFC 7541: a digit takes 5 or 6 bits), so
  /// an answer's HEADERS frame is a byte longer or shorter with the time of day, and two runs a
  /// second apart may differ there: `theirs`, its stream's `response_bytes` one byte off `mine` or
  /// its connection's received counts one a stream off, taken as `mine`.
  private static func allowingDates(_ theirs: NSDictionary, as mine: NSDictionary) -> NSDictionary {
    let slack = mine["kind"] as? String == "http" ? 1 : mine["http_exchanges"] as? Int ?? 0
    let allowed = theirs.mutableCopy() as! NSMutableDictionary
    for key in ["response_bytes", "bytes_received", "tls_bytes_received"] {
      if let one = mine[key] as? Int, let other = theirs[key] as? Int, abs(one - other) <= slack { allowed[key] = one }
    }
    return allowed
  }

  /// A record as JSON with its keys sorted: one text for equal records.
  private static func canonical(_ record: NSDictionary) throws -> String {
    String(decoding: try JSONSerialization.data(withJSONObject: record, options: [.sortedKeys]), as: UTF8.self)
  }

  private static func kinds(_ records: [NSDictionary]) -> [String] {
    records.map { ($0["kind"] as? String) ?? "?" }
  }

  @Test("curl: connections and simple exchanges recorded without the monitor, as the monitor records them")
  func curlWithoutTheMonitor() throws {
    let server = try LoopbackServer()
    let scratch = try TemporaryDirectory("light")
    defer { scratch.remove() }
    let url = "http://127.0.0.1:\(server.port)"
    // Three exchanges on one connection (curl reuses it), a 404, and a second connection by name.
    let (records, loaded, _, _) = try Self.expectSameRecords(
      ["curl", "-s", "-o", "/dev/null", "-o", "/dev/null", "-o", "/dev/null", "-o", "/dev/null",
       url + "/bytes/100", url + "/bytes/70000?page=2", url + "/status/404",
       "http://localhost:\(server.port)/bytes/5"], in: scratch)
    #expect(!loaded, "simple exchanges never load the monitor")
    #expect(Self.kinds(records).filter { $0 == "http" }.count == 4)
    // curl closes its connections at its exit, in its own order.
    let connections = records.filter { $0["kind"] as? String == "connection" }
      .map { (host: $0["host"] as? String ?? "", exchanges: $0["http_exchanges"] as? Int ?? 0) }
      .sorted { $0.host < $1.host }
    #expect(connections.map(\.host) == ["127.0.0.1", "localhost"] && connections.map(\.exchanges) == [3, 1])
    // HTTP/1.0 requests (`--http1.0`), keep-alive asked: two exchanges on one connection.
    let older = try Self.expectSameRecords(
      ["curl", "-s", "--http1.0", "-H", "Connection: keep-alive", "-o", "/dev/null", "-o", "/dev/null",
       url + "/bytes/100", url + "/bytes/7000?page=2"], in: scratch)
    #expect(!older.monitorLoaded, "HTTP/1.0 requests are the library's too")
    let exchanges = older.records.filter { $0["kind"] as? String == "http" }
    #expect(exchanges.map { $0["protocol"] as? String } == ["http/1.0", "http/1.0"])
    #expect(exchanges.map { $0["reused_connection"] as? Bool } == [false, true])
  }

  @Test("curl uploading (`-T`: `Expect: 100-continue`): the 100 Continue, then the body, recorded without the monitor")
  func uploadsAfterContinue() throws {
    let server = try LoopbackServer()
    let scratch = try TemporaryDirectory("light")
    defer { scratch.remove() }
    let small = scratch.file("small.bin"), big = scratch.file("big.bin")
    try Data(repeating: 0x73, count: 3_000).write(to: small)
    try Data(repeating: 0x62, count: 1_500_000).write(to: big)
    let url = "http://127.0.0.1:\(server.port)"
    // Two uploads of a known length on one connection (the server echoes each body), then a GET.
    let (records, loaded, _, _) = try Self.expectSameRecords(
      ["curl", "-s", "-o", "/dev/null", "-T", small.path, "\(url)/echo", "--next", "-s", "-o", "/dev/null", "-T",
       big.path, "\(url)/echo?big", "--next", "-s", "-o", "/dev/null", "\(url)/bytes/10"], in: scratch)
    #expect(!loaded, "a 100 Continue before the body is the replay's")
    let exchanges = records.filter { $0["kind"] as? String == "http" }
    #expect(exchanges.map { $0["method"] as? String } == ["PUT", "PUT", "GET"])
    #expect(exchanges.map { $0["status"] as? Int } == [200, 200, 200])
    // Each answer's bytes count its 100 Continue's 25.
    let answers = exchanges.map { $0["response_bytes"] as? Int ?? 0 }
    #expect(answers[0] > 3_000 + 25 && answers[1] > 1_500_000 + 25, "\(answers)")
    #expect(records.filter { $0["kind"] as? String == "connection" }.map { $0["http_exchanges"] as? Int } == [3])
    // An upload of unknown length (`-T -`): chunked, after a 100 Continue too.
    let piped = try Self.expectSameRecords(
      ["sh", "-c", "printf '{\"id\": 7}' | curl -s -o /dev/null -T - \(url)/echo?piped"], in: scratch)
    #expect(!piped.monitorLoaded, "a chunked body after a 100 Continue is the replay's")
    #expect(piped.records.filter { $0["kind"] as? String == "http" }.map { $0["status"] as? Int } == [200])
    // Over HTTPS: the 100 Continue in the plaintext of an OpenSSL session.
    let tls = try LoopbackServer.makeCertificate(in: scratch.url)
    let secure = try LoopbackServer(tls: tls)
    let uploaded = try Self.expectSameRecords(
      ["curl", "-s", "--cacert", tls.certificate, "-o", "/dev/null", "-T", small.path, "https://localhost:\(secure.port)/echo"],
      in: scratch)
    #expect(!uploaded.monitorLoaded, "a 100 Continue inside TLS is the replay's too")
    #expect(uploaded.records.filter { $0["kind"] as? String == "http" }.map { $0["response_bytes"] as? Int ?? 0 }.map { $0 > 3_025 } == [true])
  }

  @Test("python's http.server (HTTP/1.0 answers) to curl and to urllib (`Connection: close`): never the monitor")
  func http10AndConnectionClose() throws {
    let scratch = try TemporaryDirectory("light")
    defer { scratch.remove() }
    let files = scratch.file("www")
    try FileManager.default.createDirectory(at: files, withIntermediateDirectories: true)
    try Data(repeating: 0x61, count: 3_000).write(to: files.appendingPathComponent("a.bin"))
    try Data(repeating: 0x62, count: 70_000).write(to: files.appendingPathComponent("b.bin"))
    let server = try FileServer(serving: files)
    let url = "http://127.0.0.1:\(server.port)"
    let (curled, curlLoaded, _, _) = try Self.expectSameRecords(
      ["curl", "-s", "-o", "/dev/null", "-o", "/dev/null", url + "/a.bin", url + "/b.bin?page=2"], in: scratch)
    #expect(!curlLoaded, "HTTP/1.0 answers framed by Content-Length are simple")
    #expect(curled.filter { $0["kind"] as? String == "http" }.map { $0["status"] as? Int } == [200, 200])
    // urllib asks `Connection: close`, one connection a request (pyenv's python3, unstripped, is a
    // light client too: no OpenSSL inside it).
    let program = """
      import urllib.request
      for path in ["/a.bin", "/b.bin?page=2", "/a.bin?x=%20y"]:
          urllib.request.urlopen("\(url)" + path).read()
      """
    let (records, loaded, _, _) = try Self.expectSameRecords(["python3", "-c", program], in: scratch)
    #expect(!loaded, "urllib's requests are simple")
    let exchanges = records.filter { $0["kind"] as? String == "http" }
    #expect(exchanges.map { $0["response_bytes"] as? Int ?? 0 }.map { $0 > 3_000 } == [true, true, true])
    #expect(records.filter { $0["kind"] as? String == "connection" }.count == 3)
  }

  @Test("python: requests with bodies, sent after their heads in calls of their own, recorded without the monitor")
  func requestBodies() throws {
    let server = try LoopbackServer()
    let scratch = try TemporaryDirectory("light")
    defer { scratch.remove() }
    // http.client sends a head, then its body in another call.
    let program = """
      import http.client
      c = http.client.HTTPConnection("127.0.0.1", \(server.port))
      for method, path, body in [("POST", "/echo", b"x" * 500), ("PUT", "/echo", b'{"a": [1, 2]}'),
                                 ("GET", "/bytes/20", None), ("DELETE", "/echo", b""), ("POST", "/echo", b"y" * 70000)]:
          c.request(method, path, body=body)
          c.getresponse().read()
      c.close()
      """
    let (records, loaded, _, _) = try Self.expectSameRecords(["python3", "-c", program], in: scratch)
    #expect(!loaded, "a body its Content-Length frames is the replay's")
    let exchanges = records.filter { $0["kind"] as? String == "http" }
    #expect(exchanges.map { $0["method"] as? String } == ["POST", "PUT", "GET", "DELETE", "POST"])
    #expect(exchanges.first?["request_bytes"] as? Int ?? 0 > 500 && exchanges.last?["request_bytes"] as? Int ?? 0 > 70000)
  }

  @Test("HTTP/2 prior knowledge (cleartext h2): each stream recorded without the monitor, which takes a connection over where it is")
  func cleartextHTTP2() throws {
    let scratch = try TemporaryDirectory("light")
    defer { scratch.remove() }
    let tls = try LoopbackServer.makeCertificate(in: scratch.url)
    let nginx = try LoopbackNginx(files: ["page.bin": 3000, "big.bin": 70000], tls: tls, http2: true)
    let base = "http://127.0.0.1:\(nginx.h2cPort)"
    let curl = "curl -s --http2-prior-knowledge -o /dev/null"
    // A request each (this curl's second request on a prior-knowledge connection fails against
    // this nginx, monitored or not): a file, a 404, one of many DATA frames, a HEAD.
    let (records, loaded, _, _) = try Self.expectSameRecords(
      ["sh", "-c", "\(curl) \(base)/page.bin; \(curl) \(base)/missing; \(curl) \(base)/big.bin; \(curl) -I \(base)/page.bin"],
      in: scratch, inAnyOrder: true, hpackDates: true)
    #expect(!loaded, "cleartext HTTP/2 from the client's preface is read by the library")
    let streams = records.filter { $0["kind"] as? String == "http" }
    #expect(streams.count == 4 && streams.allSatisfy { $0["protocol"] as? String == "h2" && $0["scheme"] as? String == "http" })
    #expect(streams.compactMap { $0["status"] as? Int }.sorted() == [200, 200, 200, 404])
    #expect(streams.contains { $0["target"] as? String == "/big.bin" && $0["response_bytes"] as? Int ?? 0 > 70000 })
    #expect(records.filter { $0["kind"] as? String == "connection" }.allSatisfy { $0["http_exchanges"] as? Int == 1 })
    // A body (light only: curl writes a small upload's frames in one call or two, by timing).
    let post = try Self.records(of: ["sh", "-c", "\(curl) -d hello \(base)/page.bin"], light: true, in: scratch)
    #expect(!post.monitorLoaded && post.records.filter { $0["kind"] as? String == "http" }.map { $0["status"] as? Int } == [405])
    // A stream, then a rare method on another connection (it loads the monitor), then a stream
    // on the first again: the monitor reads it with the library's reader, from the socket's bytes.
    let plain = try LoopbackServer()
    let program = """
      import socket, urllib.request, h2.config, h2.connection, h2.events, h2.settings
      sock = socket.create_connection(("127.0.0.1", \(nginx.h2cPort)))
      connection = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
      # Windows wide enough for every answer, opened once: no WINDOW_UPDATE sent as data arrives
      # (how many, and so the bytes sent, would depend on how the reads split the frames).
      connection.local_settings = h2.settings.Settings(client=True, initial_values={
          h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: 1 << 20})
      connection.initiate_connection()
      connection.increment_flow_control_window(1 << 20)
      sock.sendall(connection.data_to_send())
      def get(path):
          stream = connection.get_next_available_stream_id()
          connection.send_headers(stream, [(":method", "GET"), (":path", path), (":scheme", "http"),
                                           (":authority", "127.0.0.1")], end_stream=True)
          sock.sendall(connection.data_to_send())
          while True:
              events = connection.receive_data(sock.recv(65536))
              sock.sendall(connection.data_to_send())
              if any(isinstance(e, h2.events.StreamEnded) and e.stream_id == stream for e in events):
                  return
      get("/page.bin")
      try:
          urllib.request.urlopen(urllib.request.Request("http://127.0.0.1:\(plain.port)/bytes/100", method="M-SEARCH"))
      except urllib.error.HTTPError as error:
          error.read()  # the whole answer (501), as the monitor's run reads it: not by timing
      get("/big.bin")
      connection.close_connection()
      sock.sendall(connection.data_to_send())
      sock.close()
      """
    let taken = try Self.expectSameRecords(["python3", "-c", program], in: scratch, hpackDates: true)
    #expect(taken.monitorLoaded)
    let h2Streams = taken.records.filter { $0["kind"] as? String == "http" && $0["protocol"] as? String == "h2" }
    #expect(h2Streams.map { $0["target"] as? String } == ["/page.bin", "/big.bin"])
    let h2Connection = try #require(taken.records.first { $0["kind"] as? String == "connection" && $0["peer_port"] as? Int == Int(nginx.h2cPort) })
    #expect(h2Connection["http_exchanges"] as? Int == 2)
  }

  @Test("curl: HEAD, and an answer without a body (a 304), recorded without the monitor")
  func bodilessAnswers() throws {
    let scratch = try TemporaryDirectory("light")
    defer { scratch.remove() }
    let tls = try LoopbackServer.makeCertificate(in: scratch.url)
    let nginx = try LoopbackNginx(files: ["page.bin": 3000], tls: tls)
    let base = "http://127.0.0.1:\(nginx.port)"
    // HEAD (curl -I), a conditional GET nginx answers 304 (its file's Last-Modified, asked of it
    // first, unmonitored), a HEAD again, and a 404 on one connection.
    let head = try ProgramRun.run(["curl", "-s", "-I", "\(base)/page.bin"]).stdoutText
    let modified = try #require(
      head.split(separator: "\r\n").first { $0.lowercased().hasPrefix("last-modified:") }?.dropFirst(14)
        .trimmingCharacters(in: .whitespaces))
    let (records, loaded, _, _) = try Self.expectSameRecords(
      ["curl", "-s", "-o", "/dev/null", "-I", "\(base)/page.bin", "--next", "-s", "-o", "/dev/null", "-H",
       "If-Modified-Since: \(modified)", "\(base)/page.bin", "--next", "-s", "-o", "/dev/null",
       "-I", "\(base)/page.bin?again", "--next", "-s", "-o", "/dev/null", "\(base)/missing"], in: scratch)
    #expect(!loaded, "an answer without a body is the replay's")
    let exchanges = records.filter { $0["kind"] as? String == "http" }
    #expect(exchanges.map { $0["method"] as? String } == ["HEAD", "GET", "HEAD", "GET"])
    #expect(exchanges.map { $0["status"] as? Int } == [200, 304, 200, 404])
    #expect(exchanges.prefix(3).allSatisfy { ($0["response_bytes"] as? Int ?? 0) < 400 })
    #expect(records.filter { $0["kind"] as? String == "connection" }.map { $0["http_exchanges"] as? Int } == [4])
  }

  @Test("python: chunked bodies and close-delimited answers recorded without the monitor, which takes a connection over mid-exchange")
  func takenOverMidExchange() throws {
    let server = try LoopbackServer()
    let scratch = try TemporaryDirectory("light")
    defer { scratch.remove() }
    // Chunked answers, a body, and an answer that runs to the close (the server closes after it):
    // the library's.
    let chunked = """
      import http.client
      c = http.client.HTTPConnection("127.0.0.1", \(server.port))
      for method, path, body in [("GET", "/bytes/10", None), ("GET", "/chunked/3000", None),
                                 ("POST", "/echo", b"x" * 500), ("GET", "/chunked/2500", None),
                                 ("GET", "/chunked/0", None), ("HEAD", "/chunked/10", None),
                                 ("PUT", "/echo", iter([b"ab", b"cdef" * 500])), ("GET", "/close/3000", None)]:
          c.request(method, path, body=body, encode_chunked=not isinstance(body, (bytes, type(None))))
          answer = c.getresponse().read()
          assert method != "PUT" or answer == b"ab" + b"cdef" * 500
      c.close()
      """
    let light = try Self.expectSameRecords(["python3", "-c", chunked], in: scratch)
    #expect(!light.monitorLoaded, "chunked and close-delimited answers are the library's")
    let exchanges = light.records.filter { $0["kind"] as? String == "http" }
    #expect(exchanges.map { $0["response_bytes"] as? Int ?? 0 }.dropFirst().first ?? 0 > 3000)
    #expect(exchanges.last?["response_bytes"] as? Int ?? 0 > 3000 && exchanges.last?["response_complete"] as? Bool == true)
    #expect(light.records.last { $0["kind"] as? String == "connection" }?["http_exchanges"] as? Int == 8)
    let put = try #require(exchanges.first { $0["method"] as? String == "PUT" })
    #expect(put["request_bytes"] as? Int ?? 0 > 2002 && put["response_bytes"] as? Int ?? 0 > 2002)
    // The monitor loaded by another connection's request (a rare method) while the library is
    // halfway through a chunked body (the server pauses after its first chunk): the monitor goes
    // on from where the library was in it.
    let halfway = """
      import http.client
      c = http.client.HTTPConnection("127.0.0.1", \(server.port))
      c.request("GET", "/bytes/10"); c.getresponse().read()
      c.request("GET", "/chunked/3000?pause"); r = c.getresponse(); first = r.read(5)
      d = http.client.HTTPConnection("127.0.0.1", \(server.port))
      d.request("M-SEARCH", "/bytes/300"); d.getresponse().read(); d.close()
      assert len(first + r.read()) == 3000
      c.request("POST", "/echo", body=b"x" * 500); c.getresponse().read()
      c.request("GET", "/chunked/2500"); c.getresponse().read()
      c.close()
      """
    let (records, loaded, _, _) = try Self.expectSameRecords(["python3", "-c", halfway], in: scratch, inAnyOrder: true)
    #expect(loaded, "a rare method needs the monitor")
    let statuses = records.filter { $0["kind"] as? String == "http" }.compactMap { $0["status"] as? Int }
    #expect(statuses.sorted() == [200, 200, 200, 200, 501])
    let connections = records.filter { $0["kind"] as? String == "connection" }
    #expect(connections.map { $0["http_exchanges"] as? Int }.sorted { ($0 ?? 0) < ($1 ?? 0) } == [1, 4])
    // And loaded between a chunked request's last byte and its answer: the monitor ends that
    // body where the library had read it to.
    let ended = """
      import http.client
      c = http.client.HTTPConnection("127.0.0.1", \(server.port))
      c.request("GET", "/bytes/10"); c.getresponse().read()
      c.request("PUT", "/echo", body=iter([b"ab", b"cd"]), encode_chunked=True)
      e = http.client.HTTPConnection("127.0.0.1", \(server.port))
      e.request("M-SEARCH", "/bytes/3"); e.getresponse().read(); e.close()
      assert c.getresponse().read() == b"abcd"
      c.request("GET", "/bytes/20"); c.getresponse().read()
      c.close()
      """
    let afterEnd = try Self.expectSameRecords(["python3", "-c", ended], in: scratch, inAnyOrder: true)
    #expect(afterEnd.monitorLoaded)
    let endedPut = try #require(afterEnd.records.first { $0["method"] as? String == "PUT" })
    #expect(endedPut["status"] as? Int == 200 && endedPut["response_complete"] as? Bool == true)
    #expect(afterEnd.records.filter { $0["kind"] as? String == "http" }.count == 4)
  }

  @Test("a fork child: its first bytes on an inherited connection load the monitor; a copy it never uses is not recorded")
  func forkChild() throws {
    let server = try LoopbackServer()
    let scratch = try TemporaryDirectory("light")
    defer { scratch.remove() }
    // pyenv's python3 (unstripped) is a light client: the parent never loads the monitor.
    let program = """
      import http.client, os, sys
      c = http.client.HTTPConnection("127.0.0.1", \(server.port))
      def get(path):
          c.request("GET", path)
          c.getresponse().read()
      get("/bytes/10")
      get("/bytes/11")
      idle = os.fork()
      if idle == 0:
          sys.exit(0)
      os.waitpid(idle, 0)
      busy = os.fork()
      if busy == 0:
          get("/bytes/20")
          get("/bytes/21")
          sys.exit(0)
      os.waitpid(busy, 0)
      get("/bytes/12")
      print(os.getpid(), busy)
      """
    let (records, loaded, output, stderr) = try Self.expectSameRecords(
      ["python3", "-c", program], in: scratch, inAnyOrder: true)
    // "elfhook: recording python3[PID] to …" from the busy child alone.
    let pids = output.split(separator: " ").map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }
    #expect(loaded && pids.count == 2 && stderr.contains("python3[\(pids[1])]") && !stderr.contains("python3[\(pids[0])]"),
            "the child's bytes on its parent's connection load the monitor in the child, not in the parent: \(stderr)")
    let targets = records.filter { $0["kind"] as? String == "http" }.compactMap { $0["target"] as? String }
    #expect(targets.sorted() == ["/bytes/10", "/bytes/11", "/bytes/12", "/bytes/20", "/bytes/21"])
    // The parent's connection (3 exchanges), and the copy the busy child used (its 2, after the 2
    // it inherited); not the idle child's.
    let exchanges = records.filter { $0["kind"] as? String == "connection" }.compactMap { $0["http_exchanges"] as? Int }
    #expect(exchanges.sorted() == [3, 4])
  }

  @Test("a connection left open at exit: recorded then, between exchanges by the library, halfway by the monitor")
  func openAtExit() throws {
    let server = try LoopbackServer()
    let scratch = try TemporaryDirectory("light")
    defer { scratch.remove() }
    // Two connections, never closed: one after a whole exchange, one with its request unanswered
    // yet (`/hangup` holds it) when the program exits.
    let source = """
      #include <arpa/inet.h>
      #include <stdio.h>
      #include <stdlib.h>
      #include <string.h>
      #include <sys/socket.h>
      #include <unistd.h>
      static int open_connection(void) {
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        struct sockaddr_in address = {.sin_family = AF_INET, .sin_port = htons(\(server.port))};
        inet_pton(AF_INET, "127.0.0.1", &address.sin_addr);
        if (connect(fd, (struct sockaddr *)&address, sizeof address) != 0) exit(3);
        return fd;
      }
      int main(void) {
        char request[200], response[4096];
        int fd = open_connection();
        snprintf(request, sizeof request, "GET /bytes/10 HTTP/1.1\\r\\nHost: 127.0.0.1:\(server.port)\\r\\n\\r\\n");
        write(fd, request, strlen(request));
        ssize_t got = 0, n;  /* the whole response: its head, then its 10 bytes */
        char *end = NULL;
        while (!(end && response + got - (end + 4) >= 10) && (n = read(fd, response + got, sizeof response - 1 - got)) > 0) {
          got += n;
          response[got] = 0;
          end = strstr(response, "\\r\\n\\r\\n");
        }
        int pending = open_connection();
        snprintf(request, sizeof request, "GET /bytes/20 HTTP/1.1\\r\\nHost: 127.0.0.1:\(server.port)\\r\\n\\r\\n");
        write(pending, request, strlen(request));
        exit(0);
      }
      """
    let program = try InjectionTests.compile(source, named: "open_at_exit", in: scratch, flags: ["-s"])
    let (records, _, _, _) = try Self.expectSameRecords([program.path], in: scratch)
    #expect(records.filter { $0["kind"] as? String == "connection" }.count == 2)
    #expect(records.filter { $0["kind"] as? String == "http" }.count >= 1)
  }

  @Test("curl: HTTPS after HTTP in one process, both recorded without the monitor")
  func tlsAfterPlaintext() throws {
    let scratch = try TemporaryDirectory("light")
    defer { scratch.remove() }
    let tls = try LoopbackServer.makeCertificate(in: scratch.url)
    let plain = try LoopbackServer()
    let secure = try LoopbackServer(tls: tls)
    let (records, loaded, _, _) = try Self.expectSameRecords(
      ["curl", "-s", "--cacert", tls.certificate, "-o", "/dev/null", "-o", "/dev/null", "-o", "/dev/null",
       "http://127.0.0.1:\(plain.port)/bytes/10", "https://localhost:\(secure.port)/bytes/10",
       "https://localhost:\(secure.port)/bytes/70000"], in: scratch)
    #expect(!loaded, "an OpenSSL session over a connection the library tracks is recorded there")
    let secured = try #require(
      records.first { $0["kind"] as? String == "connection" && $0["peer_port"] as? Int == Int(secure.port) })
    #expect(secured["tls_version"] as? String != nil && secured["tls_ms"] as? String == "some")
    #expect(secured["http_exchanges"] as? Int == 2 && secured["tls_bytes_received"] as? Int ?? 0 > 70000)
    let exchanges = records.filter { $0["kind"] as? String == "http" && $0["scheme"] as? String == "https" }
    #expect(exchanges.map { $0["reused_connection"] as? Bool } == [false, true])
  }

  @Test("curl over HTTPS (OpenSSL): nginx's answers, a server not named by SNI, and a failed handshake, all without the monitor")
  func tlsWithoutTheMonitor() throws {
    let scratch = try TemporaryDirectory("light")
    defer { scratch.remove() }
    let tls = try LoopbackServer.makeCertificate(in: scratch.url)
    let nginx = try LoopbackNginx(files: ["page.bin": 3000], tls: tls)
    let plain = try LoopbackServer()
    // By name (SNI: localhost), then by address (no SNI: the Host header names it), a 404 on that
    // connection; then a handshake with a server that speaks no TLS.
    let (records, loaded, _, _) = try Self.expectSameRecords(
      ["sh", "-c", "curl -s --cacert \(tls.certificate) -o /dev/null -o /dev/null -o /dev/null "
        + "https://localhost:\(nginx.tlsPort)/page.bin https://127.0.0.1:\(nginx.tlsPort)/page.bin "
        + "https://127.0.0.1:\(nginx.tlsPort)/missing; curl -s --cacert \(tls.certificate) "
        + "https://127.0.0.1:\(plain.port)/bytes/10; true"], in: scratch, inAnyOrder: true)
    #expect(!loaded)
    let exchanges = records.filter { $0["kind"] as? String == "http" }
    #expect(exchanges.map { $0["status"] as? Int } == [200, 200, 404])
    #expect(exchanges.allSatisfy { $0["scheme"] as? String == "https" && $0["tls_version"] as? String != nil })
    let connections = records.filter { $0["kind"] as? String == "connection" }
    #expect(Set(connections.compactMap { $0["host"] as? String }) == ["localhost", "127.0.0.1"])
    let failed = try #require(connections.first { $0["peer_port"] as? Int == Int(plain.port) })
    #expect((failed["error"] as? [String: Any])?["call"] as? String == "SSL_do_handshake")
    // Python's ssl module: SSL_read_ex and SSL_write_ex, on a socket BIO.
    let program = """
      import ssl, urllib.request
      context = ssl.create_default_context(cafile="\(tls.certificate)")
      for path in ["/page.bin", "/page.bin?again=1"]:
          urllib.request.urlopen("https://localhost:\(nginx.tlsPort)" + path, context=context).read()
      """
    let python = try Self.expectSameRecords(["python3", "-c", program], in: scratch)
    #expect(!python.monitorLoaded)
    #expect(python.records.filter { $0["kind"] as? String == "http" }.map { $0["status"] as? Int } == [200, 200])
    // asyncio's memory BIOs: the ciphertext moves after each call, so the session is paired with
    // the connection its thread sends the ClientHello on next.
    let asynchronous = """
      import asyncio, ssl
      async def main():
          context = ssl.create_default_context(cafile="\(tls.certificate)")
          reader, writer = await asyncio.open_connection("localhost", \(nginx.tlsPort), ssl=context)
          for path in ["/page.bin", "/page.bin?again=1"]:
              writer.write(f"GET {path} HTTP/1.1\\r\\nHost: localhost\\r\\n\\r\\n".encode())
              head = await reader.readuntil(b"\\r\\n\\r\\n")
              await reader.readexactly(3000)
          writer.close()
      asyncio.run(main())
      """
    let memory = try Self.expectSameRecords(["python3", "-c", asynchronous], in: scratch)
    #expect(!memory.monitorLoaded)
    #expect(memory.records.filter { $0["kind"] as? String == "http" }.map { $0["reused_connection"] as? Bool } == [false, true])
  }

  @Test("wget over HTTPS (GnuTLS): nginx's answers, a refused certificate and a failed handshake, all without the monitor")
  func gnutlsWithoutTheMonitor() throws {
    let scratch = try TemporaryDirectory("light")
    defer { scratch.remove() }
    let tls = try LoopbackServer.makeCertificate(in: scratch.url)
    let nginx = try LoopbackNginx(files: ["page.bin": 3000], tls: tls)
    let plain = try LoopbackServer()
    // Two files on one connection and a 404 on another; then a certificate wget refuses after the
    // handshake (exit 5), and a handshake with a server that speaks no TLS (exit 4).
    let wget = "wget -q -O /dev/null --ca-certificate=\(tls.certificate)"
    let (records, loaded, _, _) = try Self.expectSameRecords(
      ["sh", "-c", "\(wget) https://localhost:\(nginx.tlsPort)/page.bin https://localhost:\(nginx.tlsPort)/page.bin?2 "
        + "https://127.0.0.1:\(nginx.tlsPort)/missing; wget -q -O /dev/null https://localhost:\(nginx.tlsPort)/page.bin; "
        + "\(wget) https://127.0.0.1:\(plain.port)/bytes/10; true"], in: scratch, inAnyOrder: true)
    #expect(!loaded)
    let exchanges = records.filter { $0["kind"] as? String == "http" }
    #expect(exchanges.map { $0["status"] as? Int } == [200, 200, 404])
    #expect(exchanges.allSatisfy { $0["scheme"] as? String == "https" && $0["tls_version"] as? String != nil })
    let connections = records.filter { $0["kind"] as? String == "connection" }
    #expect(connections.count == 4)
    let failed = try #require(connections.first { $0["peer_port"] as? Int == Int(plain.port) })
    #expect((failed["error"] as? [String: Any])?["call"] as? String == "gnutls_handshake")
  }

  @Test("curl over HTTPS: request bodies and a chunked answer recorded by the library, and the monitor taking a session over")
  func tlsTakenOver() throws {
    let scratch = try TemporaryDirectory("light")
    defer { scratch.remove() }
    let tls = try LoopbackServer.makeCertificate(in: scratch.url)
    let secure = try LoopbackServer(tls: tls)
    let curl = ["curl", "-s", "--cacert", tls.certificate, "-o", "/dev/null"]
    // A GET, then a POST with a body (its Content-Length) and a PUT on the same connection.
    let posted = try Self.expectSameRecords(
      curl + ["https://localhost:\(secure.port)/bytes/10", "--next"] + curl
        + ["-d", "hello", "https://localhost:\(secure.port)/echo", "--next"] + curl
        + ["-X", "PUT", "-d", "{\"a\": 1}", "https://localhost:\(secure.port)/echo"], in: scratch)
    #expect(!posted.monitorLoaded)
    let exchanges = posted.records.filter { $0["kind"] as? String == "http" }
    #expect(exchanges.map { $0["method"] as? String } == ["GET", "POST", "PUT"])
    #expect(exchanges.map { $0["reused_connection"] as? Bool } == [false, true, true])
    // Then a chunked answer on that connection, the library's too, and one that runs to the close;
    // then a rare method, which the monitor reads from its head on.
    let chunked = try Self.expectSameRecords(
      curl + ["https://localhost:\(secure.port)/bytes/10", "--next"] + curl
        + ["-d", "hello", "https://localhost:\(secure.port)/echo", "--next"] + curl
        + ["https://localhost:\(secure.port)/chunked/3000"], in: scratch)
    #expect(!chunked.monitorLoaded)
    #expect(chunked.records.filter { $0["kind"] as? String == "http" }.map { $0["response_bytes"] as? Int ?? 0 }.last ?? 0 > 3000)
    let closing = try Self.expectSameRecords(
      curl + ["https://localhost:\(secure.port)/chunked/3000", "--next"] + curl
        + ["https://localhost:\(secure.port)/close/300"], in: scratch)
    #expect(!closing.monitorLoaded)
    #expect(closing.records.filter { $0["kind"] as? String == "http" }.map { $0["response_bytes"] as? Int ?? 0 }.last ?? 0 > 300)
    let rare = try Self.expectSameRecords(
      curl + ["https://localhost:\(secure.port)/chunked/3000", "--next"] + curl
        + ["-X", "M-SEARCH", "https://localhost:\(secure.port)/bytes/300"], in: scratch)
    #expect(rare.monitorLoaded)
    #expect(rare.records.filter { $0["kind"] as? String == "http" }.compactMap { $0["status"] as? Int } == [200, 501])
  }

  @Test("curl over HTTPS with HTTP/2 (ALPN h2): every stream recorded without the monitor, which takes a connection over where it is")
  func http2WithoutTheMonitor() throws {
    let scratch = try TemporaryDirectory("light")
    defer { scratch.remove() }
    let tls = try LoopbackServer.makeCertificate(in: scratch.url)
    let nginx = try LoopbackNginx(files: ["page.bin": 3000, "big.bin": 70000], tls: tls, http2: true)
    let base = "https://localhost:\(nginx.tlsPort)"
    let curl = "curl -s --cacert \(tls.certificate) -o /dev/null"
    // Three streams in turn on one connection (a 404 and one of many DATA frames among them),
    // eight multiplexed on one (--parallel), and a HEAD. The ciphertext received is compared by
    // presence: whether nginx's last TLS record (an empty one after the last stream) arrives
    // before curl closes is the scheduler's to say.
    let parallel = (1...8).map { "-o /dev/null \(base)/page.bin?\($0)" }.joined(separator: " ")
    let (records, loaded, _, _) = try Self.expectSameRecords(
      ["sh", "-c", "\(curl) -o /dev/null -o /dev/null \(base)/page.bin \(base)/missing \(base)/big.bin; "
        + "curl -s --cacert \(tls.certificate) --parallel \(parallel); \(curl) -I \(base)/page.bin"],
      in: scratch, inAnyOrder: true, alsoVolatile: ["bytes_received"], hpackDates: true)
    #expect(!loaded, "HTTP/2 over a session the library recorded is read there")
    let streams = records.filter { $0["kind"] as? String == "http" }
    #expect(streams.count == 12 && streams.allSatisfy { $0["protocol"] as? String == "h2" })
    let gets: [Int] = streams.filter { $0["method"] as? String == "GET" }.compactMap { $0["status"] as? Int }
    #expect(gets.sorted() == Array(repeating: 200, count: 10) + [404])
    #expect(streams.contains { $0["method"] as? String == "HEAD" && $0["status"] as? Int == 200 })
    #expect(streams.contains { $0["target"] as? String == "/big.bin" && $0["response_bytes"] as? Int ?? 0 > 70000 })
    let exchanges = records.filter { $0["kind"] as? String == "connection" }.compactMap { $0["http_exchanges"] as? Int }
    #expect(exchanges.sorted() == [1, 3, 8])
    // A request body (nginx: 405), which HTTP/1.1's replay would hand over. (Not compared with
    // the monitor's: curl sends its frames of a small upload in one write or in two, by timing.)
    let post = try Self.records(of: ["sh", "-c", "\(curl) -d hello \(base)/page.bin"], light: true, in: scratch)
    #expect(!post.monitorLoaded && post.status == 0)
    let posted = post.records.filter { $0["kind"] as? String == "http" }
    #expect(posted.map { $0["method"] as? String } == ["POST"] && posted.map { $0["status"] as? Int } == [405])
    #expect(posted.first?["request_bytes"] as? Int ?? 0 > 5 && posted.first?["response_complete"] as? Bool == true)
    // A rare method over plaintext between two streams of one HTTP/2 connection loads the
    // monitor, which reads the connection's next stream with the library's frame reader and tables.
    let plain = try LoopbackServer()
    let taken = try Self.expectSameRecords(
      ["curl", "-s", "--cacert", tls.certificate, "-o", "/dev/null", "\(base)/page.bin", "--next", "-s", "-o",
       "/dev/null", "-X", "M-SEARCH", "http://127.0.0.1:\(plain.port)/bytes/100", "--next", "-s", "--cacert",
       tls.certificate, "-o", "/dev/null", "\(base)/big.bin"], in: scratch, alsoVolatile: ["bytes_received"],
      hpackDates: true)
    #expect(taken.monitorLoaded)
    let takenStreams = taken.records.filter { $0["kind"] as? String == "http" }
    #expect(takenStreams.map { $0["protocol"] as? String } == ["h2", "http/1.1", "h2"])
    let h2Connection = try #require(taken.records.first { $0["kind"] as? String == "connection" && $0["tls_alpn"] as? String == "h2" })
    #expect(h2Connection["http_exchanges"] as? Int == 2)
  }
}

/// `python3 -m http.server` serving a directory on 127.0.0.1 and a free port, for as long as the
/// value lives: an HTTP/1.0 server, as many a developer runs.
private final class FileServer {
  let port: UInt16
  private let process = Process()

  init(serving directory: URL) throws {
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = [
      "python3", "-u", "-m", "http.server", "0", "--bind", "127.0.0.1", "--directory", directory.path,
    ]
    let output = Pipe()
    process.standardOutput = output
    process.standardError = FileHandle.nullDevice
    try process.run()
    // "Serving HTTP on 127.0.0.1 port 41234 (http://127.0.0.1:41234/) ..."
    var line = Data()
    while !line.contains(UInt8(ascii: "\n")) {
      let chunk = output.fileHandleForReading.availableData
      if chunk.isEmpty { break }
      line.append(chunk)
    }
    let words = String(decoding: line, as: UTF8.self).split(separator: " ")
    guard let index = words.firstIndex(of: "port"), index + 1 < words.count, let port = UInt16(words[index + 1]) else {
      process.terminate()
      throw LoopbackServer.ServerError(message: "http.server did not start: \(String(decoding: line, as: UTF8.self))")
    }
    self.port = port
  }

  deinit {
    // SIGKILL: a child of a test's thread may start with SIGTERM blocked (its signal mask).
    kill(process.processIdentifier, SIGKILL)
    process.waitUntilExit()
  }
}
