import Foundation
import NetMonitor
import Testing
import TestSupport

@testable import ElfHookCLI

/// The pieces the release bundle and the service recipe stand on, one at a time.
@Suite("shipping: library lookup, the JSON Lines destination, ring producers")
struct ShippingUnitTests {
  @Test("elfhook looks beside itself, then in ../lib/elfhook, then ../lib; ELFHOOK_LIBRARY_DIR first")
  func libraryLookup() throws {
    #expect(
      PreloadLibrary.searchPath(executableDirectory: "/opt/elfhook/bin")
        == ["/opt/elfhook/bin", "/opt/elfhook/lib/elfhook", "/opt/elfhook/lib"])
    #expect(PreloadLibrary.searchPath(executableDirectory: "/bin") == ["/bin", "/lib/elfhook", "/lib"])
    let directory = try TemporaryDirectory("library-dir")
    defer { directory.remove() }
    _ = try directory.write("", to: PreloadLibrary.fileName)
    #expect(throws: CommandFailure.self) { try PreloadLibrary.locate(environment: ["ELFHOOK_LIBRARY_DIR": directory.url.path]) }
    _ = try directory.write("", to: PreloadLibrary.monitorFileName)
    #expect(
      try PreloadLibrary.locate(environment: ["ELFHOOK_LIBRARY_DIR": directory.url.path])
        == directory.path(PreloadLibrary.fileName))
    do {
      _ = try PreloadLibrary.locate(environment: ["ELFHOOK_LIBRARY_DIR": "/nonexistent"])
      Issue.record("a missing ELFHOOK_LIBRARY_DIR was accepted")
    } catch {
      #expect("\(error)".hasPrefix("ELFHOOK_LIBRARY_DIR=/nonexistent: cannot read /nonexistent/libElfHookPreload.so"))
    }
  }

  @Test("--jsonl: lines written after the last saved cursor (a crash in between) are cut off at the next start")
  func jsonLinesDestination() throws {
    let directory = try TemporaryDirectory("jsonl-destination")
    defer { directory.remove() }
    let path = directory.path("out.jsonl")
    let transactions = ReportScenario().transactions
    let records = transactions.enumerated().map { SourcedRecord(transaction: $0.element, position: UInt64($0.offset)) }
    let first = try JSONLinesDestination(path: path, saved: nil)
    try first.append(Array(records[..<3]))
    let saved = first.cursor
    try first.append(Array(records[3..<6]))  // written, but the exporter died before saving its state
    let restarted = try JSONLinesDestination(path: path, saved: saved)
    #expect(restarted.cursor == saved)
    try restarted.append(Array(records[3..<6]))
    let lines = try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n").map(String.init)
    #expect(lines == transactions[..<6].map { $0.jsonLine() })
    // Another file under the name (rotated): left alone, appended to.
    try FileManager.default.removeItem(atPath: path)
    _ = try directory.write("kept\n", to: "out.jsonl")
    let rotated = try JSONLinesDestination(path: path, saved: restarted.cursor)
    #expect(rotated.cursor.offset == 5)
  }

  @Test("a ring's producer runs while its pid lives and is not younger than the ring")
  func ringProducer() throws {
    let now = UInt64(Date().timeIntervalSince1970 * 1e9)
    #expect(RingProducer.isRunning(pid: getpid(), ringCreatedUnixNs: now))
    #expect(!RingProducer.isRunning(pid: getpid(), ringCreatedUnixNs: 1_000_000_000), "the pid was used again since")
    let exited = try TestProcess.run(["/bin/true"])
    #expect(!RingProducer.isRunning(pid: exited.process.processIdentifier, ringCreatedUnixNs: now))
    #expect(!RingProducer.isRunning(pid: 0, ringCreatedUnixNs: now))
  }
}
