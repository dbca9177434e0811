import Foundation
import Testing
import TestSupport

@testable import NetMonitor

/// A client connection that no lookup named takes its server's name from its first request's
/// Host header, when the header names that server (its port is the connection's): curl resolves
/// `localhost` itself, and its connection and requests used to land on two HOSTS rows.
@Suite("Connections named by their first request's Host header")
struct HostHeaderNameTests {
  @Test("curl http://localhost: one HOSTS row; a Host header for another port names nothing")
  func curlLocalhost() throws {
    let (elfhook, _) = try InjectionTests.products()
    let server = try LoopbackServer()
    let scratch = try TemporaryDirectory("injection")
    defer { scratch.remove() }
    let output = scratch.file("records.jsonl")
    let run = try ProgramRun.run([
      elfhook, "run", "--output", output.path, "--", "sh", "-c",
      "curl -s -o /dev/null http://localhost:\(server.port)/bytes/3"
        + " && curl -s -o /dev/null -H 'Host: example.com' http://127.0.0.1:\(server.port)/bytes/3",
    ])
    #expect(run.status == 0, "\(run.stderr)")
    let records = try InjectionTests.records(in: output)
    let dnsRecords = records.filter { if case .dns = $0 { return true } else { return false } }
    #expect(dnsRecords.isEmpty, "curl resolves localhost itself: no lookup names the connection")
    // Two processes, two rings: their records come in either order.
    let hosts = InjectionTests.connectionRecords(records, port: server.port).map { $0.host ?? "(none)" }
    #expect(hosts.sorted() == ["(none)", "localhost"])
    // The summary: localhost's row has its connection and its request; 127.0.0.1's has the other
    // connection, and example.com's the request that named it.
    let rows = run.stderr.split(separator: "\n").map { $0.split(separator: " ").map(String.init) }
    let row = { (host: String) in rows.first { $0.first == host }.map { Array($0[1...2]) } }
    #expect(row("localhost:\(server.port)") == ["1", "1"], "\(run.stderr)")
    #expect(row("127.0.0.1:\(server.port)") == ["1", "0"], "\(run.stderr)")
    #expect(row("example.com:80") == ["0", "1"], "\(run.stderr)")
  }
}
