import Foundation

/// The built `elfhook` and `libElfHookPreload.so` the end-to-end tests run: in
/// `$ELFHOOK_BUILD_DIR`, else beside the running test bundle (the same build directory), else in
/// `<package>/.build/debug`; `nil` where none has both (then the tests say `missingMessage`).
public enum BuiltProducts {
  public static let directory: URL? = {
    var candidates: [URL] = []
    if let directory = ProcessInfo.processInfo.environment["ELFHOOK_BUILD_DIR"] {
      candidates.append(URL(fileURLWithPath: directory))
    }
    if let exe = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") {
      candidates.append(URL(fileURLWithPath: exe).deletingLastPathComponent())
    }
    candidates.append(packageRoot.appendingPathComponent(".build/debug"))
    return candidates.first {
      FileManager.default.isExecutableFile(atPath: $0.appendingPathComponent("elfhook").path)
        && FileManager.default.fileExists(atPath: $0.appendingPathComponent("libElfHookPreload.so").path)
    }
  }()

  public static var elfhook: String? { directory?.appendingPathComponent("elfhook").path }
  public static var preloadLibrary: String? { directory?.appendingPathComponent("libElfHookPreload.so").path }
  public static let missingMessage = "elfhook and libElfHookPreload.so were not found: run `swift build` first"

  /// The package root, from this file's path: Tests/TestSupport/<file>.
  public static var packageRoot: URL {
    URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
      .deletingLastPathComponent()
  }
}
