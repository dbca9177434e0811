import Foundation
import Glibc
import NetMonitor
import Testing

@testable import ElfHookCLI

/// Following JSON Lines files as they grow: each record once, partial lines waited for, a
/// truncated file read again, bad lines reported and skipped.
@Suite("Record file poller")
struct RecordFilePollerTests {
  private func append(_ text: String, to path: String) throws {
    let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
    defer { try? handle.close() }
    try handle.seekToEnd()
    try handle.write(contentsOf: Data(text.utf8))
  }

  private func poll(_ poller: RecordFilePoller) -> (records: [Transaction], problems: [String]) {
    var records: [Transaction] = []
    let problems = poller.poll { records.append($0) }
    return (records, problems.map(\.description))
  }

  @Test func eachRecordOnceAcrossGrowth() throws {
    let directory = try TemporaryDirectory("poller")
    defer { directory.remove() }
    let lines = (0..<4).map { PrometheusSamples.http(durationMs: Double($0)).jsonLine() + "\n" }
    let path = try directory.write(lines[0] + lines[1] + String(lines[2].prefix(20)), to: "records.jsonl")
    let poller = try RecordFilePoller(paths: [path])
    #expect(poll(poller).records.map(\.durationMs) == [0, 1])
    #expect(poll(poller).records.isEmpty)
    try append(String(lines[2].dropFirst(20)) + lines[3], to: path)
    #expect(poll(poller).records.map(\.durationMs) == [2, 3])
    #expect(poll(poller).records.isEmpty)
  }

  @Test func truncatedFileIsReadAgain() throws {
    let directory = try TemporaryDirectory("poller")
    defer { directory.remove() }
    let path = directory.path("records.jsonl")
    _ = FileManager.default.createFile(atPath: path, contents: nil)
    try append(PrometheusSamples.http().jsonLine() + "\n" + PrometheusSamples.http().jsonLine() + "\n", to: path)
    let poller = try RecordFilePoller(paths: [path])
    #expect(poll(poller).records.count == 2)
    #expect(truncate(path, 0) == 0)
    try append(PrometheusSamples.dns().jsonLine() + "\n", to: path)
    #expect(poll(poller).records.map(\.kind) == [.dns])
  }

  @Test func replacedFileIsFinishedThenReadFromItsStart() throws {
    let directory = try TemporaryDirectory("poller")
    defer { directory.remove() }
    let path = try directory.write(
      PrometheusSamples.http(durationMs: 1).jsonLine() + "\n" + PrometheusSamples.http(durationMs: 2).jsonLine() + "\n",
      to: "records.jsonl")
    let poller = try RecordFilePoller(paths: [path])
    #expect(poll(poller).records.count == 2)
    try append(PrometheusSamples.http(durationMs: 3).jsonLine() + "\n", to: path)
    _ = try directory.write(PrometheusSamples.dns().jsonLine() + "\n", to: "records.jsonl")
    #expect(poll(poller).records.map(\.kind) == [.http, .dns])
  }

  @Test func badLineIsReportedAndSkipped() throws {
    let directory = try TemporaryDirectory("poller")
    defer { directory.remove() }
    let path = try directory.write(
      PrometheusSamples.dns().jsonLine() + "\n{\"kind\":\"nope\"}\n\n" + PrometheusSamples.dns().jsonLine() + "\n",
      to: "records.jsonl")
    let (records, problems) = poll(try RecordFilePoller(paths: [path]))
    #expect(records.count == 2)
    #expect(problems.count == 1)
    #expect(problems.first?.hasPrefix("\(path):2: not a record") == true)
  }

  @Test func ringIsDrained() throws {
    let elfhook = try #require(BuiltElfHook.path, Comment(rawValue: BuiltElfHook.missing))
    let library = URL(fileURLWithPath: elfhook).deletingLastPathComponent().appendingPathComponent("libElfHookPreload.so").path
    let directory = try TemporaryDirectory("poller-ring")
    defer { directory.remove() }
    let run = try BuiltElfHook.run([
      "/usr/bin/env", "-i", "LD_PRELOAD=\(library)", "ELFHOOK_OUTPUT=\(directory.path("getent.ring"))",
      "/usr/bin/getent", "ahosts", "localhost",
    ])
    try #require(run.status == 0, "getent: \(run.stderr)")
    let poller = try RecordFilePoller(paths: [directory.path("getent.ring")])
    let first = poll(poller)
    #expect(first.problems.isEmpty)
    #expect(first.records.contains { if case .dns(let dns) = $0 { dns.host == "localhost" } else { false } })
    #expect(poll(poller).records.isEmpty)  // taken out of the ring
  }

  @Test func missingFileIsOneClearError() throws {
    #expect(throws: RecordFileError.unreadable(path: "/nonexistent/records.jsonl", reason: "No such file or directory")) {
      try RecordFilePoller(paths: ["/nonexistent/records.jsonl"])
    }
  }
}
