import ArgumentParser

/// The root `elfhook` command. Each subcommand lives in its own file in this target; adding one
/// means writing its `ParsableCommand` and listing it in `subcommands` below.
public struct ElfHookCommand: ParsableCommand {
  public static let configuration = CommandConfiguration(
    commandName: "elfhook",
    abstract: "Inspect and rebind the GOT/PLT import slots of ELF programs (fishhook for Linux).",
    discussion: """
      Examples:
        elfhook inspect /usr/bin/curl
        elfhook inspect --json --pid 1234
      """,
    subcommands: [InspectCommand.self]
  )

  public init() {}
}
