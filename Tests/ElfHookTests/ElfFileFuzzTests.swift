import Foundation
import Testing
import TestSupport

@testable import ElfFileReader
@testable import ElfHook

/// A deterministic mutation corpus: truncations at many lengths and byte changes aimed at the
/// structures the reader interprets (ELF header, program and section header tables, .dynamic,
/// .dynsym, .dynstr, the version sections, the relocation sections). Every mutant is read in-process
/// (a crash would kill this test process and fail the run) and a subset through the CLI.
@Suite("ElfFile fuzz corpus")
struct ElfFileFuzzTests {
  typealias Support = ElfTestSupport

  /// The byte ranges worth mutating in `file`.
  static func regions(of file: ElfFile, size: Int) -> [Range<Int>] {
    var regions: [Range<Int>] = [0..<min(64, size)]
    func add(_ offset: UInt64, _ length: UInt64) {
      guard offset < UInt64(size), length > 0 else { return }
      let end = min(UInt64(size), offset + length)
      regions.append(Int(offset)..<Int(end))
    }
    let interesting: Set<String> = [
      ".dynamic", ".dynsym", ".dynstr", ".gnu.version", ".gnu.version_r", ".gnu.version_d", ".rela.dyn",
      ".rela.plt", ".shstrtab",
    ]
    for section in file.sections where interesting.contains(section.name) {
      add(section.fileOffset, section.size)
    }
    // The header tables, located from the raw header.
    if let first = file.segments.first(where: { $0.type == 2 }) { add(first.fileOffset, first.fileSize) }
    return regions
  }

  static func mutants(of data: Data, file: ElfFile, seed: UInt64, count: Int) -> [Data] {
    var rng = SplitMix64(state: seed)
    var result: [Data] = []
    let size = data.count
    // Truncations: the first bytes densely, then spread over the file.
    for length in [0, 1, 4, 5, 16, 17, 52, 63, 64, 65, 100, 200, 400, 600, 1000] where length < size {
      result.append(data.prefix(length))
    }
    for _ in 0..<40 { result.append(data.prefix(Int.random(in: 1..<size, using: &rng))) }
    // Header tables: e_phoff and e_shoff point at them.
    let bytes = [UInt8](data)
    func word(_ at: Int) -> Int { (0..<8).reduce(0) { $0 | Int(bytes[at + $1]) << (8 * $1) } }
    var regions = regions(of: file, size: size)
    let phoff = word(32), shoff = word(40)
    let phsize = Int(bytes[54]) | Int(bytes[55]) << 8, phnum = Int(bytes[56]) | Int(bytes[57]) << 8
    let shsize = Int(bytes[58]) | Int(bytes[59]) << 8, shnum = Int(bytes[60]) | Int(bytes[61]) << 8
    if phoff < size { regions.append(phoff..<min(size, phoff + phsize * phnum)) }
    if shoff < size { regions.append(shoff..<min(size, shoff + shsize * shnum)) }
    let special: [UInt8] = [0, 0xff, 0x7f, 0x80, 1, 2, 0xfe]
    while result.count < count {
      var mutant = [UInt8](data)
      let region = regions[Int.random(in: 0..<regions.count, using: &rng)]
      guard !region.isEmpty else { continue }
      for _ in 0..<Int.random(in: 1...8, using: &rng) {
        let at = Int.random(in: region, using: &rng)
        mutant[at] =
          Bool.random(using: &rng)
          ? special[Int.random(in: 0..<special.count, using: &rng)] : UInt8.random(in: 0...255, using: &rng)
      }
      // Sometimes also truncate the mutant.
      if Int.random(in: 0..<8, using: &rng) == 0 {
        mutant.removeSubrange(Int.random(in: 1..<mutant.count, using: &rng)...)
      }
      result.append(Data(mutant))
    }
    return result
  }

  /// Reads `path` and touches every derived property; returns whether it parsed.
  static func exercise(_ path: String) -> Bool {
    guard let file = try? ElfFile(path: path) else { return false }
    _ = file.importSlots.count
    _ = file.relroRange
    _ = file.isPIE
    _ = file.relro
    _ = file.loadedAddressRange
    _ = file.lowestLoadAddress()
    _ = file.sections.map(\.flagsDescription)
    _ = file.segments.map(\.flagsDescription)
    _ = file.dynamicSymbols.map { $0.version?.suffix }
    return true
  }

  @Test("750 mutants of /bin/ls and fixtures: no crash, CLI fails cleanly")
  func corpus() throws {
    let fixture = try Support.versionedFixture(exeFlags: ["-Wl,-z,now"])
    let directory = try Support.temporaryDirectory()
    defer {
      try? FileManager.default.removeItem(at: directory)
      try? FileManager.default.removeItem(at: fixture.directory)
    }
    // The fixture executable again without section headers, so the PT_DYNAMIC reader is fuzzed too.
    var stripped = try Data(contentsOf: URL(fileURLWithPath: fixture.executable))
    stripped.replaceSubrange(40..<48, with: [UInt8](repeating: 0, count: 8))
    stripped.replaceSubrange(58..<64, with: [UInt8](repeating: 0, count: 6))
    let strippedPath = fixture.directory.appendingPathComponent("main-nosections").path
    _ = FileManager.default.createFile(atPath: strippedPath, contents: stripped)
    let seeds: [(String, UInt64, Int)] = [
      ("/bin/ls", 0x1234_5678, 300), (fixture.executable, 0xfeed_beef, 150), (fixture.library, 0xabad_cafe, 150),
      (strippedPath, 0x5eed_0001, 150),
    ]
    var paths: [String] = []
    for (source, seed, count) in seeds {
      let data = try Data(contentsOf: URL(fileURLWithPath: source))
      let file = try ElfFile(path: source)
      for (index, mutant) in Self.mutants(of: data, file: file, seed: seed, count: count).enumerated() {
        let path = directory.appendingPathComponent("\(URL(fileURLWithPath: source).lastPathComponent)-\(index)").path
        _ = FileManager.default.createFile(atPath: path, contents: mutant)
        paths.append(path)
      }
    }
    var parsed = 0
    for path in paths where Self.exercise(path) { parsed += 1 }
    print("fuzz corpus: \(paths.count) mutants read in-process, \(parsed) parsed, \(paths.count - parsed) rejected")
    #expect(paths.count >= 750)

    guard let elfhook = Support.elfhookExecutable else {
      Issue.record(Comment(rawValue: Support.missingExecutableMessage))
      return
    }
    var cliRuns = 0
    for (index, path) in paths.enumerated() where index % 6 == 0 {
      let result = try Support.run(elfhook, ["inspect", "--json", "--data-pointers", path])
      cliRuns += 1
      #expect(!result.signaled, "\(path) killed elfhook: \(result.stderr)")
      #expect(result.status == 0 || result.status == 1, "\(path)")
      if result.status == 1 {
        #expect(result.stderr.split(separator: "\n").count == 1, "\(path): \(result.stderr)")
      } else {
        #expect((try? JSONSerialization.jsonObject(with: Data(result.stdout.utf8))) != nil, "\(path)")
      }
    }
    print("fuzz corpus: \(cliRuns) mutants run through `elfhook inspect --json`")
  }
}
