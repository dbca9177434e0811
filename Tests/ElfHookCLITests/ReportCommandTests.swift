import ArgumentParser
import Foundation
import NetMonitor
import Testing
import TestSupport

@testable import ElfHookCLI

/// `RecordFiles.load` and `elfhook report` on files written from the scenario.
@Suite("elfhook report")
struct ReportCommandTests {
  let scenario = ReportScenario()

  @Test("record files load in order, across files, skipping blank lines")
  func load() throws {
    let directory = try TemporaryDirectory("load")
    defer { directory.remove() }
    let lines = scenario.transactions.map { $0.jsonLine() }
    let half = lines.count / 2
    let first = try directory.write(lines[..<half].joined(separator: "\n") + "\n\n  \n", to: "a.jsonl")
    let second = try directory.write(lines[half...].joined(separator: "\r\n"), to: "b.jsonl")
    // Compared as lines: the file holds durations rounded to microseconds.
    #expect(try RecordFiles.load(paths: [first, second]).map { $0.jsonLine() } == lines)
  }

  @Test("lines that are not records are skipped and counted; a file with no record is one error naming the line")
  func badLines() throws {
    let directory = try TemporaryDirectory("bad-line")
    defer { directory.remove() }
    let good = scenario.transactions.prefix(2).map { $0.jsonLine() }
    // A program's own stderr line among the records, and a last line cut short (its writer killed).
    let mixed = try directory.write(
      "warning: from the program\n" + good[0] + "\n{\"kind\":\"http\",\"pid\":1}\n" + good[1] + "\n" + good[1].prefix(30),
      to: "mixed.jsonl")
    var skipped: [RecordFiles.SkippedLines] = []
    #expect(try RecordFiles.load(paths: [mixed]) { skipped.append($0) }.map { $0.jsonLine() } == good)
    #expect(skipped.count == 1 && skipped[0].count == 3)
    #expect(skipped.first?.description.hasPrefix("\(mixed): skipped 3 lines that are not records (the first, line 1: malformed JSON") == true)
    let bad = try directory.write("{\"kind\":\"http\",\"pid\":1}\n", to: "bad.jsonl")
    #expect(throws: RecordFileError.badRecord(path: bad, line: 1, reason: .missingField("process"))) {
      try RecordFiles.load(paths: [bad])
    }
  }

  @Test("a missing file is one error with the system's reason")
  func missingFile() {
    #expect(throws: RecordFileError.unreadable(path: "/nonexistent/records.jsonl", reason: "No such file or directory"))
    {
      try RecordFiles.load(paths: ["/nonexistent/records.jsonl"])
    }
  }

  @Test("the command reports a bad file as a CommandFailure (exit status 1), naming file and line")
  func commandFailure() throws {
    let directory = try TemporaryDirectory("command-failure")
    defer { directory.remove() }
    let path = try directory.write("not json\n", to: "records.jsonl")
    let command = try ReportCommand.parse([path])
    do {
      try command.run()
      Issue.record("a bad file was accepted")
    } catch let failure as CommandFailure {
      #expect(failure.description.hasPrefix("\(path):1: not a record:"))
    }
    #expect(throws: (any Error).self) { try ReportCommand.parse([]) }
  }

  @Test("--html writes the page, --waterfall adds the waterfall to the text")
  func html() throws {
    let directory = try TemporaryDirectory("command-html")
    defer { directory.remove() }
    let records = try directory.write(
      scenario.transactions.map { $0.jsonLine() }.joined(separator: "\n"), to: "run.jsonl")
    let page = directory.path("report.html")
    let command = try ReportCommand.parse(["--waterfall", "--html", page, records])
    try command.run()
    let html = try String(contentsOfFile: page, encoding: .utf8)
    #expect(html.hasPrefix("<!DOCTYPE html>"))
    #expect(html.contains("<title>elfhook report: run.jsonl</title>"))
    let text = command.text(scenario.transactions, width: 120, color: false)
    #expect(text.contains("\nSLOWEST REQUESTS\n") && text.contains("\nWATERFALL  23 requests over "))
    #expect(
      !(try ReportCommand.parse([records])).text(scenario.transactions, width: 120, color: false).contains("WATERFALL"))
  }

  @Test("--help teaches: what it prints, the phases, an example; and `elfhook` lists it")
  func help() {
    let help = ReportCommand.helpMessage(columns: 100)
    for phrase in [
      "Summarize record files", "DNS | connect | TLS", "Examples:", "elfhook report --waterfall --html",
      "--html <FILE>", "<RECORDS>",
    ] {
      #expect(help.contains(phrase), "\(phrase)")
    }
    #expect(ElfHookCommand.configuration.subcommands.contains { $0 == ReportCommand.self })
  }
}
