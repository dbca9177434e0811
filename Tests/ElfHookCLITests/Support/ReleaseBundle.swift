import ElfHookCLI
import Foundation
import Testing
import TestSupport

/// The release bundle `scripts/package` built (scripts/test builds it before `swift test`: a
/// release build is minutes, once per test run), unpacked once per test process into a
/// directory of its own: what a host without Swift gets.
enum ReleaseBundle {
  /// The package's root directory.
  static let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent().deletingLastPathComponent()

  /// `ELFHOOK_BUNDLE` when set, else `.build/dist/elfhook-VERSION-linux-ARCH.tar.gz`.
  static var tarball: String {
    if let given = ProcessInfo.processInfo.environment["ELFHOOK_BUNDLE"], !given.isEmpty { return given }
    var name = utsname()
    uname(&name)
    let machine = withUnsafeBytes(of: name.machine) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
    return packageRoot.appendingPathComponent(".build/dist/elfhook-\(ElfHookVersion.current)-linux-\(machine).tar.gz").path
  }

  static let missing = "the release bundle \(tarball) is missing: run scripts/package first (scripts/test does)"

  /// The unpacked bundle's root (`bin/elfhook`, `lib/elfhook/…`), or nil when there is no tarball
  /// or it cannot be unpacked. Removed by no one: it lives in the test process's own directory
  /// under /dev/shm or the temporary directory, named after the process.
  static let root: String? = {
    guard FileManager.default.fileExists(atPath: tarball), let directory = try? TemporaryDirectory("bundle") else {
      return nil
    }
    guard let untar = try? TestProcess.run(["/usr/bin/tar", "-xzf", tarball, "-C", directory.url.path]),
      untar.status == 0,
      let names = try? FileManager.default.contentsOfDirectory(atPath: directory.url.path),
      let top = names.first(where: { $0.hasPrefix("elfhook-") })
    else { return nil }
    atexit { if let root = ReleaseBundle.root { try? FileManager.default.removeItem(atPath: (root as NSString).deletingLastPathComponent) } }
    return directory.path(top)
  }()

  static var elfhook: String? { root.map { $0 + "/bin/elfhook" } }
  static var preloadLibrary: String? { root.map { $0 + "/lib/elfhook/libElfHookPreload.so" } }

  /// Runs `arguments` as a host without Swift would: `env -i`, PATH=/usr/bin:/bin (no toolchain,
  /// no LD_LIBRARY_PATH), plus `environment`.
  static func runBare(_ arguments: [String], environment: [String] = [], timeout: Double = 60) throws -> TestProcess {
    try TestProcess.run(["/usr/bin/env", "-i", "PATH=/usr/bin:/bin"] + environment + arguments, timeout: timeout)
  }
}

/// `python3 -m http.server` on 127.0.0.1, an ephemeral port, serving `directory`; stopped with
/// SIGKILL when released.
final class LocalWebServer {
  let process: TestProcess
  let port: UInt16
  var base: String { "http://127.0.0.1:\(port)" }

  init(serving directory: String) throws {
    let process = try TestProcess([
      "/usr/bin/env", "python3", "-u", "-m", "http.server", "0", "--bind", "127.0.0.1", "--directory", directory,
    ])
    self.process = process
    var found: UInt16?
    _ = eventually(timeout: 30) {
      let words = process.stdout.split(separator: " ")
      found = words.firstIndex(of: "port").flatMap { words.count > $0 + 1 ? UInt16(words[$0 + 1]) : nil }
      return found != nil
    }
    guard let found else {
      process.signal(SIGKILL)
      throw CocoaError(.fileReadUnknown, userInfo: [NSLocalizedDescriptionKey: "http.server did not start: \(process.stderr)"])
    }
    port = found
  }

  deinit { process.signal(SIGKILL) }
}
