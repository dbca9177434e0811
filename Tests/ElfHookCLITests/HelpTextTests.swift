import ArgumentParser
import Testing

@testable import ElfHookCLI

/// Every command's `--help` at 80 columns reads as prose: no run of spaces inside a sentence (a
/// multi-line string literal that kept its indentation shows as one), no line wider than the
/// terminal. ArgumentParser's own columns are allowed: the gap after an option's or argument's
/// label, the indentation of wrapped lines, and the USAGE line (which it never wraps).
@Suite("--help at 80 columns")
struct HelpTextTests {
  static let commands: [ParsableCommand.Type] =
    [ElfHookCommand.self] + ElfHookCommand.configuration.subcommands

  @Test("no run of spaces inside a sentence, no line over 80 columns", arguments: commands.map(CommandName.init))
  func readsCleanly(command: CommandName) {
    let help = command.type.helpMessage(columns: 80)
    #expect(!help.isEmpty)
    for problem in HelpTextLint.problems(in: help, columns: 80) {
      Issue.record("\(command): \(problem)")
    }
  }

  @Test("the lint finds a kept indentation and a line too wide")
  func lintCatchesTheFaults() {
    let kept = "OVERVIEW: Serves them.\n\nWith --prometheus, the metrics       are served at ADDR.\n"
    #expect(HelpTextLint.problems(in: kept, columns: 80).count == 1)
    let wide = String(repeating: "word ", count: 20) + "end"
    #expect(HelpTextLint.problems(in: wide, columns: 80).count == 1)
    let options = "OPTIONS:\n  -o, --output <FILE>     Write every record to FILE.\n                          wrapped.\n"
    #expect(HelpTextLint.problems(in: options, columns: 80).isEmpty)
  }
}

/// A command type with a readable name, so each case of the parameterized test says which it is.
struct CommandName: CustomStringConvertible, Sendable {
  let type: ParsableCommand.Type
  var description: String { type.configuration.commandName ?? "\(type)" }
}

/// The checks, as a function of the rendered text.
enum HelpTextLint {
  /// Sections whose lines are `  LABEL   help`: the gap after the label is a column, not a fault.
  static let labelledSections: Set<String> = ["ARGUMENTS:", "OPTIONS:", "SUBCOMMANDS:"]

  static func problems(in help: String, columns: Int) -> [String] {
    var problems: [String] = []
    var section = ""
    for line in help.split(separator: "\n", omittingEmptySubsequences: false).map(String.init) {
      if let first = line.first, first != " ", line.hasSuffix(":") || line.hasPrefix("USAGE:") {
        section = String(line.prefix { $0 != " " })
      }
      if line.hasSuffix(" ") { problems.append("trailing space: \(line)") }
      if line.count > columns && !line.hasPrefix("USAGE:") { problems.append("wider than \(columns): \(line)") }
      var body = Substring(line.drop { $0 == " " })
      if labelledSections.contains(section), line.hasPrefix("  "), !line.hasPrefix("   "),
        let gap = body.range(of: "  ")
      {
        body = body[gap.upperBound...].drop { $0 == " " }
      }
      if body.trimmingSuffix(" ").contains("  ") { problems.append("run of spaces: \(line)") }
    }
    return problems
  }
}

extension Substring {
  fileprivate func trimmingSuffix(_ character: Character) -> Substring {
    var end = endIndex
    while end > startIndex, self[index(before: end)] == character { end = index(before: end) }
    return self[startIndex..<end]
  }
}
