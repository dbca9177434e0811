import Foundation
import NetMonitor
import Testing
import TestSupport

@testable import ElfHookCLI

/// `elfhook export --otlp` end to end: the real command against `otlp_receiver.py`, a receiver
/// built on the official OpenTelemetry protobuf messages, on 127.0.0.1.
@Suite("elfhook export: OTLP end to end", .serialized)
struct ExportCommandTests {
  private static func elfhook() throws -> String {
    try #require(OTLPReceiver.isAvailable, "python3 with opentelemetry-proto is missing: run scripts/install-dependencies")
    return try #require(BuiltProducts.elfhook, Comment(rawValue: BuiltProducts.missingMessage))
  }

  /// `count` HTTP records of one process, each on a reused connection (one span each).
  private static func syntheticLines(_ count: Int, from first: Int = 0) -> [String] {
    (first..<first + count).map { index in
      let start: UInt64 = 1_700_000_000_000_000_000 + UInt64(index) * 1_000_000
      let status = index % 7 == 0 ? 503 : 200
      let record = HTTPRecord(
        pid: 4242, process: "loadgen", startUnixNs: start, durationMs: Double(index % 50) + 0.5,
        connectionId: UInt64(index / 10), scheme: .http, method: "GET", host: "127.0.0.1:9", target: "/item/\(index)",
        status: status, ttfbMs: 0.25, requestBytes: 80, responseBytes: 400, reusedConnection: true)
      return Transaction.http(record).jsonLine()
    }
  }

  private static func append(_ lines: [String], to path: String) throws {
    let handle = try #require(FileHandle(forWritingAtPath: path))
    defer { try? handle.close() }
    handle.seekToEndOfFile()
    handle.write(Data((lines.joined(separator: "\n") + "\n").utf8))
  }

  /// A port nothing listens on (bound, then closed).
  private static func freePort() throws -> UInt16 {
    let probe = try TestProcess.run(
      ["/usr/bin/env", "python3", "-c", "import socket; s=socket.socket(); s.bind(('127.0.0.1',0)); print(s.getsockname()[1])"])
    return try #require(UInt16(probe.stdout.trimmingCharacters(in: .whitespacesAndNewlines)))
  }

  @Test("records of a real `elfhook run -- curl` run: one span per http record, phases as children, exact metrics")
  func realCurlRun() throws {
    let elfhook = try Self.elfhook()
    let directory = try TemporaryDirectory("export-curl")
    defer { directory.remove() }
    try FileManager.default.createDirectory(at: directory.url.appendingPathComponent("www"), withIntermediateDirectories: true)
    _ = try directory.write(String(repeating: "a", count: 1000), to: "www/a.txt")
    _ = try directory.write("b", to: "www/b.txt")
    let web = try TestProcess([
      "/usr/bin/env", "python3", "-u", "-m", "http.server", "0", "--bind", "127.0.0.1", "--directory", directory.path("www"),
    ])
    var webPort: UInt16?
    _ = eventually(timeout: 30) {
      webPort = web.stdout.split(separator: " ").firstIndex(of: "port").flatMap { index in
        UInt16(web.stdout.split(separator: " ")[index + 1])
      }
      return webPort != nil
    }
    let port = try #require(webPort, "http.server did not start: \(web.stderr)")
    defer { web.signal(SIGKILL) }
    let records = directory.path("curl.jsonl")
    let base = "http://127.0.0.1:\(port)"
    let run = try TestProcess.run([
      elfhook, "run", "--output", records, "--", "curl", "-s", "-o", "/dev/null", "-o", "/dev/null", "-o", "/dev/null",
      "\(base)/a.txt", "\(base)/b.txt", "\(base)/missing",
    ])
    try #require(run.status == 0, "elfhook run: \(run.stderr)")
    let transactions = try RecordFiles.load(paths: [records])
    let http = transactions.compactMap { if case .http(let record) = $0 { record } else { nil } }
    try #require(http.count == 3)

    let receiver = try OTLPReceiver(in: directory)
    let export = try TestProcess.run([elfhook, "export", "--otlp", receiver.url, records])
    #expect(export.status == 0)
    #expect(export.stderr == "")
    let spans = receiver.spans()
    #expect(Set(spans.map(\.spanId)).count == spans.count)
    let requests = spans.filter { $0.parentSpanId.isEmpty }
    #expect(requests.count == http.count)
    for record in http {
      let url = "\(base)\(record.target)"
      let span = try #require(requests.first { $0.string("url.full") == url }, "no span for \(url)")
      #expect(span.name == "GET")
      #expect(span.kind == 3)
      #expect(span.string("http.request.method") == "GET")
      #expect(span.string("server.address") == "127.0.0.1")
      #expect(span.int("server.port") == Int(port))
      #expect(span.int("http.response.status_code") == record.status)
      #expect(span.string("network.protocol.name") == "http")
      #expect(span.string("network.protocol.version") == "1.1")
      #expect(span.int("http.request.size") == Int(record.requestBytes))
      #expect(span.string("network.peer.address") == "127.0.0.1")
      #expect(span.int("network.peer.port") == Int(port))
      #expect(span.int("http.response.size") == Int(record.responseBytes))
      #expect(span.resource["service.name"] as? String == "curl")
      #expect(span.resource["process.executable.name"] as? String == "curl")
      #expect(span.resource["process.pid"] as? Int == Int(record.pid))
      #expect(span.end == record.startUnixNs + HTTPSpanMapping.nanoseconds(record.durationMs))
      if record.status == 404 {
        #expect(span.string("error.type") == "404")
        #expect(span.statusCode == 2)
      } else {
        #expect(span.string("error.type") == nil)
        #expect(span.statusCode == 0)
      }
      // The connection's setup phases: children of the request span, end to end up to its start.
      let children = spans.filter { $0.parentSpanId == span.spanId }
      let phases = HTTPSpanMapping.setupPhases(of: record)
      #expect(children.map(\.name).sorted() == phases.map(\.name).sorted())
      for child in children {
        #expect(child.traceId == span.traceId)
        #expect(child.kind == 1)
        #expect(child.start >= span.start && child.end <= record.startUnixNs)
      }
    }
    // http.server speaks HTTP/1.0: every request opens its connection, so each has a connect phase.
    #expect(spans.filter { $0.name == "socket connect" }.count == http.filter { $0.connectMs != nil }.count)
    #expect(http.contains { $0.connectMs != nil })
    let dns = transactions.filter { if case .dns = $0 { true } else { false } }.count
    // Each connection once: all of curl's had an exchange, whose record carries the phase.
    let connects = transactions.filter { if case .connection(let c) = $0 { c.connectMs != nil } else { false } }.count
    #expect(connects == http.filter { $0.connectMs != nil }.count)
    #expect(receiver.histogramCount("http.client.request.duration") == http.count)
    #expect(receiver.histogramCount("elfhook.http.client.request.size") == http.count)
    #expect(receiver.histogramCount("dns.lookup.duration") == dns)
    #expect(receiver.histogramCount("elfhook.connection.connect.duration") == connects)
    #expect(receiver.histogramCount("http.server.request.duration") == 0)

    // Run again: everything was acknowledged, no span is sent twice.
    let again = try TestProcess.run([elfhook, "export", "--otlp", receiver.url, records])
    #expect(again.status == 0)
    #expect(receiver.spans().count == spans.count)
    #expect(receiver.histogramCount("http.client.request.duration") == http.count)
  }

  @Test("a real server under `elfhook run`: SERVER spans with url.path and client.address, server histograms")
  func realServerRun() throws {
    let elfhook = try Self.elfhook()
    let directory = try TemporaryDirectory("export-server")
    defer { directory.remove() }
    try FileManager.default.createDirectory(at: directory.url.appendingPathComponent("www"), withIntermediateDirectories: true)
    _ = try directory.write("hello", to: "www/index.txt")
    let records = directory.path("server.jsonl")
    let server = try TestProcess([
      elfhook, "run", "--output", records, "--", "/usr/bin/env", "python3", "-u", "-m", "http.server", "0", "--bind",
      "127.0.0.1", "--directory", directory.path("www"),
    ])
    var serverPort: UInt16?
    _ = eventually(timeout: 30) {
      let words = server.stdout.split(separator: " ")
      serverPort = words.firstIndex(of: "port").flatMap { UInt16(words[$0 + 1]) }
      return serverPort != nil
    }
    let port = try #require(serverPort, "http.server did not start: \(server.stderr)")
    for path in ["/index.txt?lang=en", "/nothing-here"] {
      _ = try TestProcess.run(["/usr/bin/curl", "-s", "-o", "/dev/null", "http://127.0.0.1:\(port)\(path)"])
    }
    let served = eventually(timeout: 10) {
      (try? RecordFiles.load(paths: [records]))?.filter { if case .http = $0 { true } else { false } }.count == 2
    }
    server.signal(SIGTERM)
    server.wait(timeout: 20)
    try #require(served, "the server's records did not arrive")
    let http = try RecordFiles.load(paths: [records]).compactMap { if case .http(let record) = $0 { record } else { nil } }
    let receiver = try OTLPReceiver(in: directory)
    let export = try TestProcess.run([elfhook, "export", "--otlp", receiver.url, "--service-name", "web", records])
    #expect(export.status == 0, "\(export.stderr)")
    let spans = receiver.spans().filter { $0.parentSpanId.isEmpty }
    #expect(spans.count == http.count)
    let page = try #require(spans.first { $0.string("url.path") == "/index.txt" })
    #expect(page.kind == 2)
    #expect(page.string("url.query") == "lang=en")
    #expect(page.string("url.scheme") == "http")
    #expect(page.string("client.address") == "127.0.0.1")
    #expect(page.int("server.port") == Int(port))
    #expect(page.resource["service.name"] as? String == "web")
    let missing = try #require(spans.first { $0.string("url.path") == "/nothing-here" })
    #expect(missing.int("http.response.status_code") == 404)
    #expect(missing.statusCode == 0)  // a 404 is the client's error, not the server's
    #expect(receiver.histogramCount("http.server.request.duration") == http.count)
    #expect(receiver.histogramCount("http.client.request.duration") == 0)
  }

  @Test("--follow: a collector refusing, then answering 503, gets every span exactly once, records appended meanwhile")
  func followThroughOutage() throws {
    let elfhook = try Self.elfhook()
    let directory = try TemporaryDirectory("export-outage")
    defer { directory.remove() }
    let records = try directory.write(Self.syntheticLines(300).joined(separator: "\n") + "\n", to: "r.jsonl")
    let port = try Self.freePort()
    let exporter = try TestProcess([
      elfhook, "export", "--otlp", "http://127.0.0.1:\(port)", "--follow", "--metrics-interval", "1", records,
    ])
    usleep(1_500_000)  // refused meanwhile
    try Self.append(Self.syntheticLines(200, from: 300), to: records)
    let receiver = try OTLPReceiver(in: directory, port: port, options: ["--fail-first", "3"])
    #expect(eventually(timeout: 40) { Set(receiver.spans().map(\.spanId)).count == 500 })
    try Self.append(Self.syntheticLines(100, from: 500), to: records)
    #expect(eventually(timeout: 20) { Set(receiver.spans().map(\.spanId)).count == 600 })
    #expect(eventually(timeout: 20) { receiver.histogramCount("http.client.request.duration") == 600 })
    exporter.signal(SIGTERM)
    exporter.wait(timeout: 20)
    #expect(exporter.status == 0, "\(exporter.stderr)")
    #expect(receiver.spans().count == 600, "a span was received twice")
    #expect(receiver.answeredStatuses().prefix(3) == [503, 503, 503])
    #expect(exporter.stderr.contains("is unavailable"))
  }

  @Test("SIGKILL mid-way, then a restart: nothing lost, nothing sent twice but the batch in flight")
  func killAndRestart() throws {
    let elfhook = try Self.elfhook()
    let directory = try TemporaryDirectory("export-kill")
    defer { directory.remove() }
    let records = try directory.write(Self.syntheticLines(3000).joined(separator: "\n") + "\n", to: "r.jsonl")
    let receiver = try OTLPReceiver(in: directory, options: ["--delay", "0.3"])
    let first = try TestProcess([elfhook, "export", "--otlp", receiver.url, records])
    #expect(eventually(timeout: 30) { receiver.answeredStatuses().filter { $0 == 200 }.count >= 2 })
    first.signal(SIGKILL)
    first.wait(timeout: 10)
    let received = receiver.spans().count
    #expect(received < 3000, "the exporter finished before it was killed")
    let second = try TestProcess.run([elfhook, "export", "--otlp", receiver.url, records], timeout: 90)
    #expect(second.status == 0, "\(second.stderr)")
    let spans = receiver.spans()
    #expect(Set(spans.map(\.spanId)).count == 3000)
    // Only a batch the collector had taken when the kill came, but whose acknowledgement the
    // exporter never saved, can come twice — with the same ids, so the receiver can tell.
    #expect(spans.count - 3000 <= TraceBatch.maxSpans)
    #expect(receiver.histogramCount("http.client.request.duration") == 3000)
    let third = try TestProcess.run([elfhook, "export", "--otlp", receiver.url, records])
    #expect(third.status == 0)
    #expect(receiver.spans().count == spans.count)
  }

  @Test("a garbage line: reported with its file and line and skipped, the records around it sent, status 1")
  func garbageLine() throws {
    let elfhook = try Self.elfhook()
    let directory = try TemporaryDirectory("export-garbage")
    defer { directory.remove() }
    let lines = Self.syntheticLines(2) + ["{\"kind\":\"http\",\"pid\":"] + Self.syntheticLines(1, from: 2)
    let records = try directory.write(lines.joined(separator: "\n") + "\n", to: "r.jsonl")
    let receiver = try OTLPReceiver(in: directory)
    let export = try TestProcess.run([elfhook, "export", "--otlp", receiver.url, records])
    #expect(export.status == 1)
    let said = export.stderr.split(separator: "\n")
    #expect(said.count == 2, "\(export.stderr)")
    #expect(said.first?.hasPrefix("elfhook: \(records):3: not a record: ") == true)
    #expect(said.last == "elfhook: 1 line of the record files was not a record, skipped (see above)")
    #expect(receiver.spans().count == 3)
    // Run again: the cursor is past the bad line; nothing is sent or said again.
    let again = try TestProcess.run([elfhook, "export", "--otlp", receiver.url, records])
    #expect(again.status == 0, "\(again.stderr)")
    #expect(receiver.spans().count == 3)
    // A file cut in the middle of its last line (a writer killed mid-write): the same, at its line.
    let cut = Self.syntheticLines(2, from: 10)
    let truncated = try directory.write(cut[0] + "\n" + cut[1].prefix(40), to: "cut.jsonl")
    let second = try TestProcess.run([elfhook, "export", "--otlp", receiver.url, truncated])
    #expect(second.status == 1)
    #expect(second.stderr.hasPrefix("elfhook: \(truncated):2: not a record: "))
    #expect(second.stderr.split(separator: "\n").count == 2)
    #expect(receiver.spans().count == 4)
  }

  @Test("an unreachable collector without --follow: a non-zero exit and one line, in bounded time")
  func unreachable() throws {
    let elfhook = try Self.elfhook()
    let directory = try TemporaryDirectory("export-unreachable")
    defer { directory.remove() }
    let records = try directory.write(Self.syntheticLines(5).joined(separator: "\n") + "\n", to: "r.jsonl")
    let port = try Self.freePort()
    let started = Date()
    let export = try TestProcess.run([elfhook, "export", "--otlp", "http://127.0.0.1:\(port)", records], timeout: 60)
    #expect(Date().timeIntervalSince(started) < 30)
    #expect(export.status == 1)
    #expect(export.stderr.hasPrefix("elfhook: cannot reach the collector at http://127.0.0.1:\(port): "))
    #expect(export.stderr.split(separator: "\n").count == 1)
  }

  @Test("a collector answering 400: one line per batch, the batch is not retried forever, exit status 1")
  func rejected() throws {
    let elfhook = try Self.elfhook()
    let directory = try TemporaryDirectory("export-rejected")
    defer { directory.remove() }
    let records = try directory.write(Self.syntheticLines(700).joined(separator: "\n") + "\n", to: "r.jsonl")
    let receiver = try OTLPReceiver(in: directory, options: ["--reject"])
    let export = try TestProcess.run([elfhook, "export", "--otlp", receiver.url, records])
    #expect(export.status == 1)
    let lines = export.stderr.split(separator: "\n")
    #expect(lines.count == 3)  // two batches, then the summary
    #expect(lines.first?.contains("HTTP 400") == true)
    #expect(receiver.answeredStatuses().filter { $0 == 400 }.count == 2)
  }

  @Test("a record ring: its slots are freed only once the collector has its spans")
  func ring() throws {
    let elfhook = try Self.elfhook()
    let library = try #require(BuiltProducts.preloadLibrary)
    let directory = try TemporaryDirectory("export-ring")
    defer { directory.remove() }
    let receiver = try OTLPReceiver(in: directory)
    // curl, monitored by the preload library alone: its records stay in its ring. (Not through
    // env: env would create the ring, and curl, exec'd, a second one.)
    let curl = try TestProcess.run(
      ["/usr/bin/curl", "-s", "-o", "/dev/null", "-o", "/dev/null", "\(receiver.url)/a", "\(receiver.url)/b"],
      environment: ["LD_PRELOAD": library, "ELFHOOK_OUTPUT": directory.path("curl.ring")])
    try #require(curl.status == 0 || curl.status == 22, "curl: \(curl.stderr)")
    let ring = directory.path("curl.ring")
    let http = try RecordFiles.load(paths: [ring]).filter { if case .http = $0 { true } else { false } }
    try #require(http.count == 2)
    let export = try TestProcess.run([elfhook, "export", "--otlp", receiver.url, "--state", directory.path("state"), ring])
    #expect(export.status == 0, "\(export.stderr)")
    #expect(receiver.spans().filter { $0.parentSpanId.isEmpty }.count == 2)
    #expect(try RecordRing(path: ring).peekPublished(limit: 100).isEmpty)
    let again = try TestProcess.run([elfhook, "export", "--otlp", receiver.url, "--state", directory.path("state"), ring])
    #expect(again.status == 0)
    #expect(receiver.spans().filter { $0.parentSpanId.isEmpty }.count == 2)
  }

  @Test("a ring's acknowledged slots not yet freed when the exporter died are freed at the next start, not resent")
  func ringCrashWindow() throws {
    let library = try #require(BuiltProducts.preloadLibrary, Comment(rawValue: BuiltProducts.missingMessage))
    let directory = try TemporaryDirectory("export-ring-window")
    defer { directory.remove() }
    let ring = directory.path("curl.ring")
    _ = try TestProcess.run(
      ["/usr/bin/curl", "-s", "-o", "/dev/null", "http://127.0.0.1:9/"],
      environment: ["LD_PRELOAD": library, "ELFHOOK_OUTPUT": ring])
    let first = try RingSource(path: ring, saved: nil)
    let batch = try #require(try first.nextBatch(maxSpans: 512, atEnd: true))
    #expect(!batch.records.isEmpty)
    first.acknowledge(batch)  // saved, then killed before didPersist: the slots are still in the ring
    #expect(try RecordRing(path: ring).peekPublished(limit: 100).count == batch.slotCount)
    let restarted = try RingSource(path: ring, saved: first.cursor)
    #expect(try restarted.nextBatch(maxSpans: 512, atEnd: true) == nil)
    #expect(try RecordRing(path: ring).peekPublished(limit: 100).isEmpty)
  }

  @Test("the state directory: created 0700, one exporter at a time, state written atomically and read back")
  func stateDirectory() throws {
    let directory = try TemporaryDirectory("export-state")
    defer { directory.remove() }
    let path = directory.path("state")
    let store = try ExportStateStore(directory: path)
    let attributes = try FileManager.default.attributesOfItem(atPath: path)
    #expect((attributes[.posixPermissions] as? Int) == 0o700)
    #expect(throws: CommandFailure.self) { try ExportStateStore(directory: path) }
    var state = ExportState()
    state.cursors["/x"] = SourceCursor(device: 1, inode: 2, offset: 3, line: 4)
    try store.save(state)
    #expect(try store.load().cursors == state.cursors)
    #expect(!FileManager.default.fileExists(atPath: path + "/state.json.tmp"))
  }
}
