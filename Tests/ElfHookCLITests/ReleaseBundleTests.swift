import Foundation
import NetMonitor
import Testing
import TestSupport

@testable import ElfHookCLI

/// The release bundle (`scripts/package`), unpacked and run as on a host without Swift: `env -i`,
/// PATH=/usr/bin:/bin, no toolchain and no LD_LIBRARY_PATH.
@Suite("the release bundle", .serialized)
struct ReleaseBundleTests {
  private static func root() throws -> String {
    try #require(ReleaseBundle.root, Comment(rawValue: ReleaseBundle.missing))
  }

  /// What docs/building.md says a host needs: libc6 (its dynamic loader too), libgcc-s1, zlib1g.
  static let commonLibraries: Set<String> = [
    "libc.so.6", "libm.so.6", "libgcc_s.so.1", "libz.so.1", "libdl.so.2", "libpthread.so.0",
    "librt.so.1", "libutil.so.1", "ld-linux-x86-64.so.2", "ld-linux-aarch64.so.1",
  ]

  @Test("every file is where the layout says; readelf -d shows no RUNPATH and only common libraries")
  func layoutAndDynamicSections() throws {
    let root = try Self.root()
    let files = ["bin/elfhook", "lib/elfhook/libElfHookPreload.so", "lib/elfhook/libElfHookMonitor.so"]
    for file in files { #expect(FileManager.default.isReadableFile(atPath: root + "/" + file), "\(file)") }
    #expect(FileManager.default.fileExists(atPath: root + "/share/doc/elfhook/README.md"))
    #expect(FileManager.default.fileExists(atPath: root + "/share/doc/elfhook/licenses/swift.txt"))
    #expect(FileManager.default.isExecutableFile(atPath: root + "/install"))
    // Every ELF file in the bundle, whatever its name.
    let enumerator = try #require(FileManager.default.enumerator(atPath: root))
    var elfFiles: [String] = []
    for case let relative as String in enumerator {
      let path = root + "/" + relative
      guard enumerator.fileAttributes?[.type] as? FileAttributeType == .typeRegular,
        let handle = FileHandle(forReadingAtPath: path) else { continue }
      let magic = handle.readData(ofLength: 4)
      try? handle.close()
      if magic == Data([0x7F, 0x45, 0x4C, 0x46]) { elfFiles.append(relative) }
    }
    #expect(Set(elfFiles) == Set(files))
    for file in elfFiles {
      let readelf = try TestProcess.run(["/usr/bin/readelf", "-d", root + "/" + file])
      #expect(readelf.status == 0, "\(readelf.stderr)")
      let lines = readelf.stdout.split(separator: "\n")
      for line in lines where line.contains("(RUNPATH)") || line.contains("(RPATH)") {
        Issue.record("\(file) has a RUNPATH: \(line)")
      }
      let needed = lines.filter { $0.contains("(NEEDED)") }.compactMap { line in
        line.split(separator: "[").last.map { String($0.dropLast()) }
      }
      #expect(!needed.isEmpty)
      for library in needed { #expect(Self.commonLibraries.contains(library), "\(file) needs \(library)") }
    }
  }

  static var machine: String {
    var name = utsname()
    uname(&name)
    return withUnsafeBytes(of: name.machine) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
  }

  @Test("elfhook --version, from the bundle under env -i")
  func version() throws {
    let root = try Self.root()
    let run = try ReleaseBundle.runBare([root + "/bin/elfhook", "--version"])
    #expect(run.status == 0, "\(run.stderr)")
    #expect(run.stdout == ElfHookVersion.current + "\n")
    #expect(ReleaseBundle.tarball.hasSuffix("elfhook-\(ElfHookVersion.current)-linux-\(Self.machine).tar.gz")
      || ProcessInfo.processInfo.environment["ELFHOOK_BUNDLE"] != nil)
  }

  @Test("the bundle's install puts it under a prefix; elfhook there, or a symlink to it, finds its libraries")
  func install() throws {
    let root = try Self.root()
    let directory = try TemporaryDirectory("bundle-install")
    defer { directory.remove() }
    let prefix = directory.path("prefix")
    let install = try ReleaseBundle.runBare([root + "/install", "--prefix", prefix])
    #expect(install.status == 0, "\(install.stderr)")
    #expect(install.stdout.contains("LD_PRELOAD=\(prefix)/lib/elfhook/libElfHookPreload.so"), "\(install.stdout)")
    for file in ["bin/elfhook", "lib/elfhook/libElfHookPreload.so", "lib/elfhook/libElfHookMonitor.so"] {
      #expect(FileManager.default.fileExists(atPath: prefix + "/" + file), "\(file)")
    }
    try FileManager.default.createSymbolicLink(atPath: directory.path("elfhook"), withDestinationPath: prefix + "/bin/elfhook")
    let run = try ReleaseBundle.runBare([directory.path("elfhook"), "run", "--", "true"])
    #expect(run.status == 0, "\(run.stderr)")
    #expect(run.stderr.contains("No records."), "\(run.stderr)")
  }

  @Test("elfhook run monitors curl and python3 from the unpacked bundle; report reads the records; jsonl round-trips")
  func runFromTheBundle() throws {
    let root = try Self.root()
    let directory = try TemporaryDirectory("bundle-run")
    defer { directory.remove() }
    try FileManager.default.createDirectory(at: directory.url.appendingPathComponent("www"), withIntermediateDirectories: true)
    _ = try directory.write(String(repeating: "x", count: 3000), to: "www/data.txt")
    let server = try LocalWebServer(serving: directory.path("www"))
    let records = directory.path("run.jsonl")
    let script = """
      curl -s -o /dev/null \(server.base)/data.txt?from=curl && \
      python3 -c 'import urllib.request; urllib.request.urlopen("\(server.base)/data.txt?from=python").read()'
      """
    let run = try ReleaseBundle.runBare([root + "/bin/elfhook", "run", "--output", records, "--", "sh", "-c", script])
    #expect(run.status == 0, "\(run.stderr)")
    #expect(run.stderr.contains("127.0.0.1:\(server.port)"), "the summary names the server: \(run.stderr)")
    let transactions = try RecordFiles.load(paths: [records])
    let requests = transactions.compactMap { record -> (String, String?)? in
      guard case .http(let http) = record, http.role == .client else { return nil }
      return (http.process, http.target)
    }
    #expect(requests.contains { $0.0 == "curl" && $0.1 == "/data.txt?from=curl" }, "\(requests)")
    #expect(requests.contains { $0.0 == "python3" && $0.1 == "/data.txt?from=python" }, "\(requests)")

    let report = try ReleaseBundle.runBare([root + "/bin/elfhook", "report", records])
    #expect(report.status == 0 && report.stdout.contains("/data.txt"), "\(report.stderr)")
    let lines = try ReleaseBundle.runBare([root + "/bin/elfhook", "report", "--format", "jsonl", records])
    #expect(lines.status == 0, "\(lines.stderr)")
    #expect(lines.stdout == (try String(contentsOfFile: records, encoding: .utf8)), "JSON Lines in, the same lines out")
  }

  @Test("report --format jsonl of a run's record rings equals what elfhook run --output writes of them")
  func ringsToJSONLines() throws {
    let root = try Self.root()
    let directory = try TemporaryDirectory("bundle-rings")
    defer { directory.remove() }
    try FileManager.default.createDirectory(at: directory.url.appendingPathComponent("www"), withIntermediateDirectories: true)
    _ = try directory.write("hello", to: "www/a.txt")
    let server = try LocalWebServer(serving: directory.path("www"))
    // The processes record into the directory of an `elfhook run` (its RingCollector), with the
    // environment it gives them; the rings are read by the command, then drained as the run
    // drains them into --output (RunSession: RingCollector.drain, Transaction.appendJSONLine).
    let collector = try RingCollector()
    defer { collector.remove() }
    let script = """
      curl -s -o /dev/null \(server.base)/a.txt?n=1 \(server.base)/a.txt?n=2 && \
      python3 -c 'import urllib.request; urllib.request.urlopen("\(server.base)/a.txt?n=3").read()'
      """
    let monitored = try ReleaseBundle.runBare(
      ["sh", "-c", script],
      environment: ["LD_PRELOAD=\(root)/lib/elfhook/libElfHookPreload.so", "ELFHOOK_OUTPUT=\(collector.outputPattern)"])
    #expect(monitored.status == 0 && monitored.stderr.isEmpty, "\(monitored.stderr)")
    let rings = try FileManager.default.contentsOfDirectory(atPath: collector.directory).sorted().map {
      collector.directory + "/" + $0
    }
    #expect(rings.count >= 2, "curl's ring and python3's: \(rings)")
    let converted = try ReleaseBundle.runBare([root + "/bin/elfhook", "report", "--format", "jsonl"] + rings)
    #expect(converted.status == 0, "\(converted.stderr)")

    var drained: [UInt8] = []
    _ = collector.prepareDrain(final: true)
    collector.drain(final: true) { $0.appendJSONLine(to: &drained) }
    let runLines = String(decoding: drained, as: UTF8.self).split(separator: "\n").sorted()
    let reportLines = converted.stdout.split(separator: "\n").sorted()
    #expect(!runLines.isEmpty)
    // The same lines; the run interleaves the rings in the order it drains them, the command
    // writes ring after ring.
    #expect(reportLines == runLines)
    #expect(reportLines.filter { $0.contains("\"kind\":\"http\"") }.count == 3)
  }
}
