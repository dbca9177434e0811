/// `elfhook run`'s command line read directly, for the forms scripts and people write: `run`, any
/// of `-o FILE`, `--output FILE`, `--output=FILE`, `--format table|jsonl`, `--format=…` and `--live`
/// once each, then `--` or the command's first word, then the command verbatim.
///
/// Why: ArgumentParser finds a command's options by reflection, and its first parse in a process
/// looks up protocol conformances by scanning every conformance record in the binary: ~18.6 M
/// instructions, about half of `elfhook run -- true`, paid by every `elfhook run` (a script that
/// runs one per command pays it each time); even making a `RunCommand` for the options starts
/// such look-ups (its property wrappers), so this reader gives a ``RunOptions``. Anything this
/// reader does not know — `--help`, a mistake, a repeated option, an option spelled another way, a
/// value that starts with `-` — is left to ArgumentParser (`nil`), which parses it, validates it
/// and says what is wrong, so the two never disagree about a command line that both accept
/// (RunCommandLineTests checks that they agree on every form this reader takes).
extension RunCommand {
  /// The arguments after `elfhook` as the `run` command's options, or nil for ArgumentParser to
  /// parse.
  static func parsedDirectly<Arguments: Collection<String>>(_ arguments: Arguments) -> RunOptions? {
    var words = arguments[...]
    guard words.popFirst() == "run" else { return nil }
    var output: String?
    var format: Format?
    var live = false
    while let word = words.first, word.hasPrefix("-"), word != "--" {
      words.removeFirst()
      let (name, attached) = split(word)
      switch name {
      case "--live":
        guard attached == nil, !live else { return nil }
        live = true
      case "-o", "--output", "--format":
        if name == "-o", attached != nil { return nil }
        guard let value = attached ?? words.popFirst(), !value.isEmpty, !value.hasPrefix("-") else { return nil }
        if name == "--format" {
          guard format == nil, let chosen = Format(rawValue: value) else { return nil }
          format = chosen
        } else {
          guard output == nil else { return nil }
          output = value
        }
      default:
        return nil
      }
    }
    // What follows is the command, verbatim, as ArgumentParser captures it for passthrough.
    let command = Array(words)
    guard let first = command.first, first != "-h", first != "--help", command != ["--"] else { return nil }
    return RunOptions(output: output, format: format ?? .table, live: live, command: command)
  }

  /// `--name=value` as its name and value; any other word as itself and nil.
  private static func split(_ word: String) -> (name: String, value: String?) {
    guard word.hasPrefix("--"), let equals = word.firstIndex(of: "=") else { return (word, nil) }
    return (String(word[..<equals]), String(word[word.index(after: equals)...]))
  }
}
