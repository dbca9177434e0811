import ElfFileReader
import Foundation

/// What the monitor will not see of a command, said before it runs: LD_PRELOAD reaches only
/// dynamically linked programs that the dynamic linker lets preload (not set-user-ID ones), and
/// the hooks see only calls into the C library (not a Go program's own system calls).
enum CommandPreflight {
  enum Finding: Equatable {
    /// The command runs unmonitored, for the reason the sentence gives.
    case unmonitored(String)
    /// The command runs monitored, but the sentence says what of it is not seen.
    case partlySeen(String)
  }

  /// What `command` will run as, or nil when it can be monitored whole (or cannot be found: running
  /// it reports that).
  static func finding(command: String, environment: [String: String]) -> Finding? {
    guard let path = resolve(command, searchPath: environment["PATH"] ?? "/usr/bin:/bin") else { return nil }
    var status = stat()
    guard stat(path, &status) == 0 else { return nil }
    if status.st_mode & (S_ISUID | S_ISGID) != 0 && (status.st_uid != geteuid() || status.st_gid != getegid()) {
      return .unmonitored("\(path) is set-user-ID or set-group-ID: the dynamic linker ignores LD_PRELOAD for it")
    }
    if let interpreter = scriptInterpreter(path) {
      return finding(command: interpreter, environment: environment)
    }
    guard let file = try? ElfProgramHeaders(path: path) else { return nil }
    // ET_EXEC or ET_DYN (static-pie) without PT_INTERP: nothing runs LD_PRELOAD for it.
    if !file.hasInterpreter && (file.header.type == 2 || file.header.type == 3) {
      let what = file.isGoProgram ? "a statically linked Go program" : "statically linked"
      return .unmonitored("\(path) is \(what): there is no dynamic linker to load the monitor into it")
    }
    if file.isGoProgram {
      return .partlySeen(
        "\(path) is a Go program: Go makes its system calls itself, not through the C library, so its connections are not seen (docs/limits.md)")
    }
    return nil
  }

  /// `command` as execvp finds it.
  static func resolve(_ command: String, searchPath: String) -> String? {
    if command.contains("/") { return command }
    for directory in searchPath.split(separator: ":", omittingEmptySubsequences: false) {
      let candidate = (directory.isEmpty ? "." : String(directory)) + "/" + command
      if access(candidate, X_OK) == 0 { return candidate }
    }
    return nil
  }

  /// The interpreter a `#!` script names (nil for anything else, a directory included).
  private static func scriptInterpreter(_ path: String) -> String? {
    let fd = open(path, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { return nil }
    defer { close(fd) }
    var head = [UInt8](repeating: 0, count: 256)
    let count = read(fd, &head, head.count)
    guard count > 2, head[0] == UInt8(ascii: "#"), head[1] == UInt8(ascii: "!") else { return nil }
    let line = String(decoding: head[2..<count].prefix { $0 != 0x0A }, as: UTF8.self)
    return line.split(separator: " ", omittingEmptySubsequences: true).first.map(String.init)
  }
}
