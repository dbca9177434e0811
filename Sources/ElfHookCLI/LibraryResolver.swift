import ElfFileReader
import ElfHook
import Foundation

/// Finds the files a program's `DT_NEEDED` entries name, the way glibc's dynamic linker searches:
/// a name with a `/` is used as is; otherwise `DT_RPATH` of the loading object and of the objects that
/// loaded it (only when the object has no `DT_RUNPATH`), `LD_LIBRARY_PATH`, `DT_RUNPATH` of the object,
/// `/etc/ld.so.cache` (read through `ldconfig -p`), then the default directories. `$ORIGIN`
/// (and `${ORIGIN}`) expands to the directory of the object that has the path. A candidate counts
/// only when it is an ELF file of the same class and machine (the linker skips others too).
/// Not modelled: `$LIB`/`$PLATFORM`, hardware-capability subdirectories, `LD_PRELOAD`.
struct LibraryResolver {
  var environmentLibraryPath: [String]
  var cache: [String: [String]]
  var defaultDirectories = [
    "/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib64", "/usr/lib64", "/lib", "/usr/lib",
  ]

  init(environment: [String: String] = ProcessInfo.processInfo.environment) {
    environmentLibraryPath = (environment["LD_LIBRARY_PATH"] ?? "")
      .split(whereSeparator: { $0 == ":" || $0 == ";" }).map(String.init)
    cache = LibraryResolver.readLdconfigCache()
  }

  /// Breadth-first: every library in the dependency tree of `root`, each listed once.
  func resolveAll(root: ElfFile) -> [DependencyReport] {
    var reports: [DependencyReport] = []
    var seen = Set<String>()
    // Queue of (object, the rpath chain of the objects that loaded it).
    var queue: [(file: ElfFile, loaderRpaths: [[String]])] = [(root, [])]
    var head = 0
    while head < queue.count {
      let (object, loaderRpaths) = queue[head]
      head += 1
      let ownRpath = object.runpath == nil ? expand(object.rpath, origin: object.path) : []
      for name in object.neededLibraries where !seen.contains(name) {
        seen.insert(name)
        let found = resolve(name, for: object, rpaths: [ownRpath] + loaderRpaths)
        reports.append(DependencyReport(name: name, path: found?.path, via: found?.via, neededBy: object.path))
        if let found, let library = try? ElfFile(path: found.path) {
          queue.append((library, [ownRpath] + loaderRpaths))
        }
      }
    }
    return reports
  }

  func resolve(_ name: String, for object: ElfFile, rpaths: [[String]]) -> (path: String, via: String)? {
    if name.contains("/") { return matches(name, object) ? (name, "path") : nil }
    if object.runpath == nil {
      for directory in rpaths.joined() where matches(directory + "/" + name, object) {
        return (directory + "/" + name, "rpath")
      }
    }
    for directory in environmentLibraryPath where matches(directory + "/" + name, object) {
      return (directory + "/" + name, "LD_LIBRARY_PATH")
    }
    for directory in expand(object.runpath, origin: object.path) where matches(directory + "/" + name, object) {
      return (directory + "/" + name, "runpath")
    }
    for path in cache[name] ?? [] where matches(path, object) {
      return (path, "ld.so.cache")
    }
    for directory in defaultDirectories where matches(directory + "/" + name, object) {
      return (directory + "/" + name, "default path")
    }
    return nil
  }

  /// Splits a `DT_RPATH`/`DT_RUNPATH` value and expands `$ORIGIN`.
  func expand(_ searchPath: String?, origin objectPath: String) -> [String] {
    guard let searchPath else { return [] }
    let resolved = URL(fileURLWithPath: objectPath).resolvingSymlinksInPath()
    let origin = resolved.deletingLastPathComponent().path
    return searchPath.split(separator: ":").map { entry in
      String(entry).replacingOccurrences(of: "${ORIGIN}", with: origin)
        .replacingOccurrences(of: "$ORIGIN", with: origin)
    }.map { $0.isEmpty ? "." : $0 }
  }

  func matches(_ path: String, _ object: ElfFile) -> Bool {
    guard let candidate = try? ElfFile(path: path) else { return false }
    return candidate.header.bits == object.header.bits && candidate.header.machine == object.header.machine
  }

  /// `ldconfig -p` lines look like `\tlibc.so.6 (libc6,x86-64) => /lib/x86_64-linux-gnu/libc.so.6`.
  static func readLdconfigCache() -> [String: [String]] {
    guard let ldconfig = ["/sbin/ldconfig", "/usr/sbin/ldconfig"].first(where: FileManager.default.isExecutableFile)
    else { return [:] }
    let process = Process()
    process.executableURL = URL(fileURLWithPath: ldconfig)
    process.arguments = ["-p"]
    let pipe = Pipe()
    process.standardOutput = pipe
    process.standardError = FileHandle.nullDevice
    do { try process.run() } catch { return [:] }
    let data = pipe.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    var cache: [String: [String]] = [:]
    for line in String(decoding: data, as: UTF8.self).split(separator: "\n") {
      guard let arrow = line.range(of: " => ") else { continue }
      let left = line[..<arrow.lowerBound].trimmingCharacters(in: .whitespaces)
      guard let name = left.split(separator: " ").first else { continue }
      cache[String(name), default: []].append(String(line[arrow.upperBound...]))
    }
    return cache
  }
}
