import Foundation

/// Where `libElfHookPreload.so` is, first match wins:
/// 1. `ELFHOOK_PRELOAD_LIBRARY`, the library itself;
/// 2. `ELFHOOK_LIBRARY_DIR`, the directory holding it;
/// 3. beside the `elfhook` executable (where `swift build` puts both);
/// 4. `../lib/elfhook` from the executable's directory: the release bundle's and an install's
///    layout (`bin/elfhook`, `lib/elfhook/*.so`; `scripts/package`, `scripts/install`);
/// 5. `../lib`, as before the bundle existed.
///
/// The executable's directory is `/proc/self/exe` with its symbolic links resolved, so a link to
/// `elfhook` in a directory on `PATH` still finds the libraries of the tree it points into. The
/// monitor the library loads at the first call it does not record itself, `libElfHookMonitor.so`,
/// must be beside it.
enum PreloadLibrary {
  static let fileName = "libElfHookPreload.so"
  static let monitorFileName = "libElfHookMonitor.so"

  static func locate(environment: [String: String] = ProcessEnvironment.current()) throws(CommandFailure)
    -> String
  {
    if let configured = environment["ELFHOOK_PRELOAD_LIBRARY"], !configured.isEmpty {
      guard access(configured, R_OK) == 0 else {
        throw .input("ELFHOOK_PRELOAD_LIBRARY=\(configured): \(String(cString: strerror(errno)))")
      }
      return try withMonitor(absolute(configured))
    }
    if let directory = environment["ELFHOOK_LIBRARY_DIR"], !directory.isEmpty {
      let candidate = absolute(directory) + "/" + fileName
      guard access(candidate, R_OK) == 0 else {
        throw .input("ELFHOOK_LIBRARY_DIR=\(directory): cannot read \(candidate): \(String(cString: strerror(errno)))")
      }
      return try withMonitor(candidate)
    }
    let candidates = searchPath(executableDirectory: executableDirectory()).map { $0 + "/" + fileName }
    for candidate in candidates where access(candidate, R_OK) == 0 { return try withMonitor(candidate) }
    throw .input(
      "cannot find \(fileName) (looked in \(candidates.joined(separator: ", "))); build it with `swift build --product ElfHookPreload`, or set ELFHOOK_LIBRARY_DIR")
  }

  /// The directories looked in, in order, for an executable in `executableDirectory`.
  static func searchPath(executableDirectory: String) -> [String] {
    let parent = (executableDirectory as NSString).deletingLastPathComponent
    let prefix = parent == "/" ? "" : parent
    return [executableDirectory, prefix + "/lib/elfhook", prefix + "/lib"]
  }

  /// The directory of the running executable, its symbolic links resolved (`realpath` of
  /// `/proc/self/exe`).
  private static func executableDirectory() -> String {
    guard let resolved = realpath("/proc/self/exe", nil) else { return "/proc/self" }
    defer { free(resolved) }
    return (String(cString: resolved) as NSString).deletingLastPathComponent
  }

  /// `library`, once the monitor it loads is found beside it.
  private static func withMonitor(_ library: String) throws(CommandFailure) -> String {
    let monitor = (library as NSString).deletingLastPathComponent + "/" + monitorFileName
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
