import Foundation

/// Where `libElfHookPreload.so` is: `ELFHOOK_PRELOAD_LIBRARY` when set, else beside the `elfhook`
/// executable (where `swift build` puts both), else in `../lib` (an installed layout). The monitor
/// it loads at a process's first connection, `libElfHookMonitor.so`, must be beside it.
enum PreloadLibrary {
  static let fileName = "libElfHookPreload.so"
  static let monitorFileName = "libElfHookMonitor.so"

  static func locate(environment: [String: String] = ProcessInfo.processInfo.environment) throws(CommandFailure)
    -> String
  {
    if let configured = environment["ELFHOOK_PRELOAD_LIBRARY"], !configured.isEmpty {
      guard access(configured, R_OK) == 0 else {
        throw .input("ELFHOOK_PRELOAD_LIBRARY=\(configured): \(String(cString: strerror(errno)))")
      }
      return try withMonitor(absolute(configured))
    }
    let executable = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
    let candidates = [
      executable.appendingPathComponent(fileName).path,
      executable.deletingLastPathComponent().appendingPathComponent("lib").appendingPathComponent(fileName).path,
    ]
    for candidate in candidates where access(candidate, R_OK) == 0 { return try withMonitor(candidate) }
    throw .input(
      "cannot find \(fileName) (looked in \(candidates.joined(separator: " and "))); build it with `swift build --product ElfHookPreload`, or set ELFHOOK_PRELOAD_LIBRARY")
  }

  /// `library`, once the monitor it loads is found beside it.
  private static func withMonitor(_ library: String) throws(CommandFailure) -> String {
    let monitor = URL(fileURLWithPath: library).deletingLastPathComponent().appendingPathComponent(monitorFileName).path
    guard access(monitor, R_OK) == 0 else {
      throw .input(
        "\(library) loads \(monitorFileName) from its own directory, but \(monitor) cannot be read: \(String(cString: strerror(errno))); build it with `swift build --product ElfHookMonitor`")
    }
    return library
  }

  /// ld.so resolves a relative LD_PRELOAD entry against each child's working directory.
  private static func absolute(_ path: String) -> String {
    path.hasPrefix("/") ? path : FileManager.default.currentDirectoryPath + "/" + path
  }
}
