import ArgumentParser
import Testing
import TestSupport

@testable import ElfHookCLI

/// `elfhook run`'s command line read directly (RunCommandLine.swift) must mean what ArgumentParser
/// makes of it: for every command line the direct reader takes, ArgumentParser parses the same
/// options and command; the forms people write are all taken (else they pay ArgumentParser's
/// reflection); help and mistakes are all left to ArgumentParser, which reports them.
@Suite("elfhook run's command line, read directly")
struct RunCommandLineTests {
  static let usualForms: [[String]] = [
    ["run", "--", "curl", "-s", "http://127.0.0.1:8080/"],
    ["run", "curl", "-s", "-o", "/dev/null", "http://127.0.0.1:8080/"],
    ["run", "--output", "records.jsonl", "--", "python3", "app.py"],
    ["run", "-o", "records.jsonl", "--", "python3", "app.py"],
    ["run", "--output=records.jsonl", "--format", "jsonl", "--", "sh", "-c", "curl -s x"],
    ["run", "--format=table", "--live", "--", "nginx", "-g", "daemon off;"],
    ["run", "--live", "nginx"],
    ["run", "--", "--help"],
    ["run", "--", "-weird-name", "--"],
    ["run", "--", "--"],
  ]

  static let leftToArgumentParser: [[String]] = [
    ["run"], ["run", "--"], ["run", "--help"], ["run", "-h"], ["run", "-h", "--", "true"],
    ["run", "--output"], ["run", "--output", "--", "true"], ["run", "-o", "-", "--", "true"],
    ["run", "--format", "xml", "--", "true"], ["run", "--live", "--live", "--", "true"],
    ["run", "-o", "a", "-o", "b", "--", "true"], ["run", "--bogus", "--", "true"], ["run", "-oX", "true"],
    ["run", "--live=yes", "true"], ["inspect", "/usr/bin/curl"], ["--version"], [],
  ]

  @Test("the usual forms are read directly, as ArgumentParser reads them")
  func usualFormsAgree() throws {
    for arguments in Self.usualForms {
      let direct = try #require(RunCommand.parsedDirectly(arguments), "not read directly: \(arguments)")
      try expectSameAsArgumentParser(direct, arguments)
    }
  }

  @Test("help, mistakes and other commands are left to ArgumentParser")
  func restIsLeft() {
    for arguments in Self.leftToArgumentParser {
      #expect(RunCommand.parsedDirectly(arguments) == nil, "read directly: \(arguments)")
    }
  }

  /// Random command lines of the words that matter: whatever the direct reader takes, ArgumentParser
  /// accepts and reads the same way.
  @Test("every random command line read directly is read alike by ArgumentParser")
  func randomCommandLinesAgree() throws {
    let words = ["-o", "--output", "--output=a.jsonl", "--output=", "--format", "table", "jsonl", "--format=jsonl",
                 "--format=xml", "--live", "--live=1", "--", "curl", "-s", "--help", "-h", "b.jsonl", "-", "-oX",
                 "--bogus", "=", ""]
    var generator = SplitMix64(seed: 0x5EED_2611)
    var readDirectly = 0
    for _ in 0..<3_000 {
      let count = Int(generator.next() % 7)
      let arguments = ["run"] + (0..<count).map { _ in words[Int(generator.next() % UInt64(words.count))] }
      guard let direct = RunCommand.parsedDirectly(arguments) else { continue }
      readDirectly += 1
      try expectSameAsArgumentParser(direct, arguments)
    }
    #expect(readDirectly > 300, "only \(readDirectly) of 3,000 read directly")
  }

  private func expectSameAsArgumentParser(_ direct: RunOptions, _ arguments: [String]) throws {
    let parsed = try ElfHookCommand.parseAsRoot(arguments)
    let run = try #require(parsed as? RunCommand, "ArgumentParser made \(type(of: parsed)) of \(arguments)")
    #expect(direct == run.options, "\(arguments)")
  }
}
