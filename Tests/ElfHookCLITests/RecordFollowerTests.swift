import Foundation
import Glibc
import NetMonitor
import Testing
import TestSupport

@testable import ElfHookCLI

/// Following record files as every export does (`RecordFollower`): each record once, partial
/// lines waited for, a truncated file read again, bad lines reported once and skipped, a ring
/// drained, a watched directory's rings found.
@Suite("Record follower")
struct RecordFollowerTests {
  private func append(_ text: String, to path: String) throws {
    let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
    defer { try? handle.close() }
    try handle.seekToEnd()
    try handle.write(contentsOf: Data(text.utf8))
  }

  /// A follower of `paths` whose messages are kept, and one pass over it as `--prometheus` takes
  /// it: every batch taken at once.
  private final class Followed {
    var messages: [String] = []
    private(set) var follower: RecordFollower!

    init(_ paths: [String]) throws {
      follower = try RecordFollower(paths: paths, saved: [:]) { [unowned self] in self.messages.append($0) }
    }
  }

  private func follow(_ paths: [String]) throws -> Followed { try Followed(paths) }

  private func poll(_ followed: Followed) throws -> (records: [Transaction], problems: [String]) {
    let before = followed.messages.count
    var records: [Transaction] = []
    _ = try followed.follower.pass(atEnd: false) { batch, entry in
      records += batch.records.map(\.transaction)
      entry.source.acknowledge(batch)
      entry.source.didPersist(batch)
      return true
    }
    return (records, Array(followed.messages[before...]))
  }

  @Test func eachRecordOnceAcrossGrowth() throws {
    let directory = try TemporaryDirectory("poller")
    defer { directory.remove() }
    let lines = (0..<4).map { PrometheusSamples.http(durationMs: Double($0)).jsonLine() + "\n" }
    let path = try directory.write(lines[0] + lines[1] + String(lines[2].prefix(20)), to: "records.jsonl")
    let followed = try follow([path])
    #expect(try poll(followed).records.map(\.durationMs) == [0, 1])
    #expect(try poll(followed).records.isEmpty)
    try append(String(lines[2].dropFirst(20)) + lines[3], to: path)
    #expect(try poll(followed).records.map(\.durationMs) == [2, 3])
    #expect(try poll(followed).records.isEmpty)
  }

  @Test func truncatedFileIsReadAgain() throws {
    let directory = try TemporaryDirectory("poller")
    defer { directory.remove() }
    let path = directory.path("records.jsonl")
    _ = FileManager.default.createFile(atPath: path, contents: nil)
    try append(PrometheusSamples.http().jsonLine() + "\n" + PrometheusSamples.http().jsonLine() + "\n", to: path)
    let followed = try follow([path])
    #expect(try poll(followed).records.count == 2)
    #expect(truncate(path, 0) == 0)
    try append(PrometheusSamples.dns().jsonLine() + "\n", to: path)
    #expect(try poll(followed).records.map(\.kind) == [.dns])
  }

  @Test func replacedFileIsFinishedThenReadFromItsStart() throws {
    let directory = try TemporaryDirectory("poller")
    defer { directory.remove() }
    let path = try directory.write(
      PrometheusSamples.http(durationMs: 1).jsonLine() + "\n" + PrometheusSamples.http(durationMs: 2).jsonLine() + "\n",
      to: "records.jsonl")
    let followed = try follow([path])
    #expect(try poll(followed).records.count == 2)
    try append(PrometheusSamples.http(durationMs: 3).jsonLine() + "\n", to: path)
    _ = try directory.write(PrometheusSamples.dns().jsonLine() + "\n", to: "records.jsonl")
    #expect(try poll(followed).records.map(\.kind) == [.http, .dns])
  }

  @Test func badLineIsReportedAndSkipped() throws {
    let directory = try TemporaryDirectory("poller")
    defer { directory.remove() }
    let path = try directory.write(
      PrometheusSamples.dns().jsonLine() + "\n{\"kind\":\"nope\"}\n\n" + PrometheusSamples.dns().jsonLine() + "\n",
      to: "records.jsonl")
    let followed = try follow([path])
    let (records, problems) = try poll(followed)
    #expect(records.count == 2)
    #expect(problems.count == 1)
    #expect(problems.first?.hasPrefix("\(path):2: not a record") == true)
    #expect(problems.first?.hasSuffix("; skipped") == true)
    try append(PrometheusSamples.dns().jsonLine() + "\n", to: path)
    let next = try poll(followed)
    #expect(next.records.count == 1 && next.problems.isEmpty)  // reported once
    #expect(followed.follower.skippedLines == 1)
  }

  @Test func ringIsDrained() throws {
    let elfhook = try #require(BuiltProducts.elfhook, Comment(rawValue: BuiltProducts.missingMessage))
    let library = URL(fileURLWithPath: elfhook).deletingLastPathComponent().appendingPathComponent("libElfHookPreload.so").path
    let directory = try TemporaryDirectory("poller-ring")
    defer { directory.remove() }
    let run = try ProgramRun.run([
      "/usr/bin/env", "-i", "LD_PRELOAD=\(library)", "ELFHOOK_OUTPUT=\(directory.path("getent.ring"))",
      "/usr/bin/getent", "ahosts", "localhost",
    ])
    try #require(run.status == 0, "getent: \(run.stderr)")
    let followed = try follow([directory.path("getent.ring")])
    let first = try poll(followed)
    #expect(first.problems.isEmpty)
    #expect(first.records.contains { if case .dns(let dns) = $0 { dns.host == "localhost" } else { false } })
    #expect(try poll(followed).records.isEmpty)  // taken out of the ring
    #expect(FileManager.default.fileExists(atPath: directory.path("getent.ring")))  // named: kept
  }

  @Test func watchedDirectorysExitedRingIsReadThenRemoved() throws {
    let elfhook = try #require(BuiltProducts.elfhook, Comment(rawValue: BuiltProducts.missingMessage))
    let library = URL(fileURLWithPath: elfhook).deletingLastPathComponent().appendingPathComponent("libElfHookPreload.so").path
    let directory = try TemporaryDirectory("follower-watched")
    defer { directory.remove() }
    let followed = try follow([directory.url.path])
    #expect(try poll(followed).records.isEmpty)
    let run = try ProgramRun.run([
      "/usr/bin/env", "-i", "LD_PRELOAD=\(library)", "ELFHOOK_OUTPUT=\(directory.path("%p.ring"))",
      "/usr/bin/getent", "ahosts", "localhost",
    ])
    try #require(run.status == 0, "getent: \(run.stderr)")
    let found = try followed.follower.discoverRings(saved: [:])
    #expect(found.count == 1 && found.allSatisfy(\.inWatchedDirectory))
    #expect(try poll(followed).records.contains { if case .dns = $0 { true } else { false } })
    let rings = try FileManager.default.contentsOfDirectory(atPath: directory.url.path)
    #expect(rings.isEmpty, "\(rings)")  // its process has exited: read to its end, then removed
    #expect(followed.follower.entries.isEmpty)
  }

  @Test func missingFileIsOneClearError() throws {
    #expect(throws: RecordFileError.unreadable(path: "/nonexistent/records.jsonl", reason: "No such file or directory")) {
      try follow(["/nonexistent/records.jsonl"])
    }
  }
}
