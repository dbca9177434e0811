import Foundation

/// Where `libElfHookPreload.so` is: `ELFHOOK_PRELOAD_LIBRARY` when set, else beside the `elfhook`
/// executable (where `swift build` puts both), else in `../lib` (an installed layout).
enum PreloadLibrary {
  static let fileName = "libElfHookPreload.so"

  static func locate(environment: [String: String] = ProcessInfo.processInfo.environment) throws(CommandFailure)
    -> String
  {
    if let configured = environment["ELFHOOK_PRELOAD_LIBRARY"], !configured.isEmpty {
      guard access(configured, R_OK) == 0 else {
        throw .input("ELFHOOK_PRELOAD_LIBRARY=\(configured): \(String(cString: strerror(errno)))")
      }
      return absolute(configured)
    }
    let executable = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
    let candidates = [
      executable.appendingPathComponent(fileName).path,
      executable.deletingLastPathComponent().appendingPathComponent("lib").appendingPathComponent(fileName).path,
    ]
    for candidate in candidates where access(candidate, R_OK) == 0 { return candidate }
    throw .input(
      "cannot find \(fileName) (looked in \(candidates.joined(separator: " and "))); build it with `swift build --product ElfHookPreload`, or set ELFHOOK_PRELOAD_LIBRARY")
  }

  /// ld.so resolves a relative LD_PRELOAD entry against each child's working directory.
  private static func absolute(_ path: String) -> String {
    path.hasPrefix("/") ? path : FileManager.default.currentDirectoryPath + "/" + path
  }
}
