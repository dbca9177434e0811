import Foundation
import Testing

@testable import ElfFileReader
@testable import ElfHook

@Suite("ElfFile")
struct ElfFileTests {
  typealias Support = ElfTestSupport

  /// Real binaries of this machine; nginx comes from `apt-get install nginx-light`.
  static let systemBinaries = [
    "/usr/bin/curl", "/bin/ls", "/usr/lib/x86_64-linux-gnu/libssl.so.3", "/usr/sbin/nginx",
  ]

  static func importKey(_ slot: ElfFile.ImportSlot) -> Support.ReadelfRelocation {
    Support.ReadelfRelocation(
      offset: slot.offset, type: slot.typeName, symbol: slot.symbol, version: slot.version?.name)
  }

  @Test("JUMP_SLOT/GLOB_DAT slots equal readelf -rW", arguments: systemBinaries)
  func importSlotsMatchReadelf(path: String) throws {
    guard FileManager.default.fileExists(atPath: path) else {
      print("SKIPPED: \(path) is not installed (apt-get install -y nginx-light)")
      return
    }
    let file = try ElfFile(path: path)
    let expected = try Support.readelfRelocations(path).filter {
      $0.type.hasSuffix("_JUMP_SLOT") || $0.type.hasSuffix("_GLOB_DAT")
    }
    let actual = file.importSlots.filter { $0.kind != .absolute }.map(Self.importKey)
    #expect(!expected.isEmpty)
    #expect(actual.count == expected.count)
    #expect(Set(actual) == Set(expected))
    // Every relocation at all, not only slots: same count and (offset, type) pairs.
    let all = try Support.readelfRelocations(path)
    #expect(file.relocations.count == all.count)
    #expect(Set(file.relocations.map { "\($0.offset) \($0.typeName)" }) == Set(all.map { "\($0.offset) \($0.type)" }))
    // --data-pointers: symbol-bearing R_X86_64_64.
    let absolute = all.filter { ($0.type == "R_X86_64_64" || $0.type == "R_AARCH64_ABS64") && !$0.symbol.isEmpty }
    #expect(Set(file.importSlots.filter { $0.kind == .absolute }.map(Self.importKey)) == Set(absolute))
  }

  /// AArch64 files, when Debian's cross toolchain (gcc-aarch64-linux-gnu, libc6-dev-arm64-cross) is
  /// installed: a compiled executable, a relocatable object (many AArch64 relocation types) and the
  /// cross libc. Skipped with a message otherwise.
  @Test("AArch64: relocation names and import slots equal readelf -rW")
  func aarch64() throws {
    let compiler = "/usr/bin/aarch64-linux-gnu-gcc"
    guard FileManager.default.isExecutableFile(atPath: compiler) else {
      print("SKIPPED: \(compiler) is not installed (apt-get install -y gcc-aarch64-linux-gnu)")
      return
    }
    let directory = try Support.temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: directory) }
    let source = """
      #include <stdio.h>
      #include <string.h>
      int (*pointer)(const char *) = puts;
      static char buffer[64];
      int main(int argc, char **argv) { strcpy(buffer, argv[0]); puts(buffer); return pointer("y") + argc; }
      """
    let sourceURL = directory.appendingPathComponent("a64.c")
    try source.write(to: sourceURL, atomically: true, encoding: .utf8)
    var files: [String] = []
    for (output, flags) in [("a64", ["-Wl,-z,lazy"]), ("a64-now", ["-Wl,-z,now"]), ("a64.o", ["-c", "-fPIC"])] {
      let path = directory.appendingPathComponent(output).path
      let result = try Support.run(compiler, [sourceURL.path, "-o", path] + flags)
      try #require(result.status == 0, "\(result.stderr)")
      files.append(path)
    }
    let crossLibc = "/usr/aarch64-linux-gnu/lib/libc.so.6"
    if FileManager.default.fileExists(atPath: crossLibc) { files.append(crossLibc) }
    for path in files {
      let file = try ElfFile(path: path)
      #expect(file.header.machineName == "AArch64")
      let all = try Support.readelfRelocations(path)
      let mine = file.relocations.map { "\($0.offset) \($0.typeName)" }
      let theirs = all.map { "\($0.offset) \($0.type)" }
      let differences = zip(mine, theirs).filter { $0 != $1 }.prefix(5).map { "\($0) vs readelf \($1)" }
      #expect(mine.count == theirs.count && differences.isEmpty, "\(path): \(differences)")
      let expected = all.filter { $0.type.hasSuffix("_JUMP_SLOT") || $0.type.hasSuffix("_GLOB_DAT") }
      #expect(Set(file.importSlots.filter { $0.kind != .absolute }.map(Self.importKey)) == Set(expected), "\(path)")
      let absolute = all.filter { $0.type == "R_AARCH64_ABS64" && !$0.symbol.isEmpty }
      #expect(Set(file.importSlots.filter { $0.kind == .absolute }.map(Self.importKey)) == Set(absolute), "\(path)")
    }
    let executable = try ElfFile(path: files[0])
    #expect(executable.importSlots.contains { $0.symbol == "puts" && $0.typeName == "R_AARCH64_JUMP_SLOT" })
    #expect(executable.importSlots.contains { $0.symbol == "puts" && $0.kind == .absolute })
    #expect(try ElfFile(path: files[1]).relro == .full)
  }

  /// ELFCLASS32 with SHT_REL relocations: an i386 shared library and object built with `cc -m32`
  /// (no 32-bit libc needed: `-nostdlib`). Skipped with a message when the compiler cannot do it.
  @Test("i386: 32-bit class, REL relocations, names equal readelf -rW")
  func i386() throws {
    let directory = try Support.temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: directory) }
    let source = "extern int ext(int); extern int data_ext;\nint (*fp)(int) = ext;\nint f(int x) { return ext(x) + data_ext; }\n"
    let library: String
    let object: String
    do {
      library = try Support.compile(
        source, named: "t32.c", in: directory, output: "t32.so", flags: ["-m32", "-fPIC", "-shared", "-nostdlib"])
      object = try Support.compile(source, named: "t32.c", in: directory, output: "t32.o", flags: ["-m32", "-fPIC", "-c"])
    } catch {
      print("SKIPPED: cc -m32 cannot build a 32-bit fixture: \(error)")
      return
    }
    for path in [library, object] {
      let file = try ElfFile(path: path)
      #expect(file.header.bits == 32)
      #expect(file.header.machineName == "i386")
      let all = try Support.readelfRelocations(path)
      #expect(file.relocations.map { "\($0.offset) \($0.typeName) \($0.symbolName ?? "")" }
        == all.map { "\($0.offset) \($0.type) \($0.symbol)" })
      let expected = all.filter { $0.type.hasSuffix("_JUMP_SLOT") || $0.type.hasSuffix("_GLOB_DAT") }
      #expect(Set(file.importSlots.filter { $0.kind != .absolute }.map(Self.importKey)) == Set(expected))
    }
    let slots = try ElfFile(path: library).importSlots
    #expect(slots.contains { $0.symbol == "ext" && $0.typeName == "R_386_JUMP_SLOT" })
    #expect(slots.contains { $0.symbol == "data_ext" && $0.typeName == "R_386_GLOB_DAT" })
    #expect(slots.contains { $0.symbol == "ext" && $0.kind == .absolute })
  }

  @Test("dynamic symbols equal readelf --dyn-syms -W", arguments: systemBinaries)
  func dynamicSymbolsMatchReadelf(path: String) throws {
    guard FileManager.default.fileExists(atPath: path) else {
      print("SKIPPED: \(path) is not installed (apt-get install -y nginx-light)")
      return
    }
    let file = try ElfFile(path: path)
    let expected = try Support.readelfDynamicSymbols(path)
    #expect(file.dynamicSymbols.count == expected.count)
    for (symbol, line) in zip(file.dynamicSymbols, expected) {
      let section: String
      switch symbol.sectionIndex {
      case 0: section = "UND"
      case 0xfff1: section = "ABS"
      case 0xfff2: section = "COM"
      default: section = String(symbol.sectionIndex)
      }
      // readelf prints a version-definition symbol (ABS, named like its version) without a suffix.
      let isVersionNode = symbol.sectionIndex == 0xfff1 && symbol.name == symbol.version?.name
      let versioned = symbol.name + (isVersionNode ? "" : symbol.version?.suffix ?? "")
      #expect(symbol.index == line.index)
      #expect(symbol.value == line.value, "\(versioned)")
      #expect(symbol.size == line.size, "\(versioned)")
      #expect(symbol.typeName == line.type, "\(versioned)")
      #expect(symbol.bindingName == line.binding, "\(versioned)")
      #expect(symbol.visibility == line.visibility, "\(versioned)")
      #expect(section == line.section, "\(versioned)")
      #expect(versioned == line.name)
    }
  }

  @Test("header, segments, dynamic facts of /usr/bin/curl")
  func curlFacts() throws {
    let curl = try ElfFile(path: "/usr/bin/curl")
    #expect(curl.header.bits == 64)
    #expect(curl.header.typeName == "DYN")
    #expect(curl.header.machineName == "x86-64")
    #expect(curl.isPIE)
    #expect(curl.isBindNow)
    #expect(curl.relro == .full)
    #expect(curl.neededLibraries.contains("libcurl.so.4"))
    #expect(curl.neededLibraries.contains("libc.so.6"))
    #expect(curl.segments.contains { $0.typeName == "LOAD" && $0.flagsDescription == "R E" })
    #expect(curl.sections.contains { $0.name == ".dynsym" && $0.typeName == "DYNSYM" })
    #expect(curl.sections.contains { $0.name == ".got" && $0.flagsDescription == "WA" })
    #expect(curl.importSlots.allSatisfy { $0.inRelro })
    let libssl = try ElfFile(path: "/usr/lib/x86_64-linux-gnu/libssl.so.3")
    #expect(libssl.soname == "libssl.so.3")
    #expect(!libssl.isPIE)
    #expect(libssl.dynamicSymbols.contains { $0.name == "SSL_do_handshake" && $0.version?.suffix == "@@OPENSSL_3.0.0" })
  }

  @Test("program headers alone: as ElfFile reads them; a static executable has no interpreter; errors alike")
  func programHeaders() throws {
    for path in Self.systemBinaries where FileManager.default.fileExists(atPath: path) {
      let whole = try ElfFile(path: path)
      let headers = try ElfProgramHeaders(path: path)
      #expect(headers.header == whole.header, "\(path)")
      #expect(headers.segments == whole.segments, "\(path)")
      #expect(headers.hasInterpreter == whole.hasInterpreter, "\(path)")
    }
    #expect(try ElfProgramHeaders(path: "/usr/bin/curl").hasInterpreter)
    #expect(try !ElfProgramHeaders(path: "/usr/lib/x86_64-linux-gnu/libssl.so.3").hasInterpreter)
    let directory = try Support.temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: directory) }
    let program = try Support.compile(
      "int main(void) { return 0; }", named: "static.c", in: directory, output: "static", flags: ["-static"])
    let file = try ElfProgramHeaders(path: program)
    #expect(!file.hasInterpreter)
    #expect(file.header.type == 2 || file.header.type == 3)
    let text = directory.appendingPathComponent("text").path
    _ = FileManager.default.createFile(atPath: text, contents: Data("#!/bin/sh\n".utf8))
    #expect(throws: ElfFileError.notELF(path: text)) { try ElfProgramHeaders(path: text) }
  }

  @Test("notes of the PT_NOTE segments: a C program's build ID; Go's note marks a Go program, static or not")
  func notes() throws {
    let directory = try Support.temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: directory) }
    let plain = try ElfProgramHeaders(
      path: Support.compile(
        "int main(void) { return 0; }", named: "plain.c", in: directory, output: "plain", flags: ["-Wl,--build-id"]))
    #expect(plain.notes.contains { $0.owner == "GNU" && $0.type == 3 })
    #expect(!plain.isGoProgram)
    let source = try String(
      contentsOf: Support.packageRoot.appendingPathComponent("Tests/Fixtures/go_note.c"), encoding: .utf8)
    for flags in [[], ["-static"]] {
      let program = try Support.compile(source, named: "go_note.c", in: directory, output: "go\(flags.count)", flags: flags)
      let headers = try ElfProgramHeaders(path: program)
      #expect(headers.isGoProgram, "\(flags)")
      #expect(headers.notes.contains { $0.owner == "Go" && $0.type == 4 }, "\(flags)")
      #expect(headers.hasInterpreter == flags.isEmpty)
    }
  }

  @Test("symbol versions of a compiled fixture (definitions and requirements)")
  func versionedFixture() throws {
    let fixture = try Support.versionedFixture(exeFlags: ["-Wl,-z,now", "-Wl,-z,relro"])
    defer { try? FileManager.default.removeItem(at: fixture.directory) }

    let library = try ElfFile(path: fixture.library)
    let foos = library.dynamicSymbols.filter { $0.name == "foo" }
    #expect(Set(foos.compactMap { $0.version?.suffix }) == ["@VERS_1", "@@VERS_2"])
    #expect(library.dynamicSymbols.first { $0.name == "bar" }?.version?.suffix == "@@VERS_2")
    #expect(foos.allSatisfy { $0.version?.isDefinition == true && $0.typeName == "FUNC" && !$0.isUndefined })

    let executable = try ElfFile(path: fixture.executable)
    let slots = Dictionary(executable.importSlots.map { ($0.symbol, $0) }, uniquingKeysWith: { first, _ in first })
    #expect(slots["foo"]?.version?.name == "VERS_2")
    #expect(slots["foo"]?.version?.file == "libfix.so")
    #expect(slots["foo"]?.version?.isDefinition == false)
    #expect(slots["puts"]?.version?.name == "GLIBC_2.2.5")
    #expect(slots["puts"]?.version?.file == "libc.so.6")
    #expect(slots["bar"] != nil)
    #expect(executable.runpath == "$ORIGIN" || executable.rpath == "$ORIGIN")
    #expect(executable.relro == .full)
    // Same as readelf, versions included.
    let expected = try Support.readelfRelocations(fixture.executable).filter {
      $0.type.hasSuffix("_JUMP_SLOT") || $0.type.hasSuffix("_GLOB_DAT")
    }
    #expect(Set(executable.importSlots.filter { $0.kind != .absolute }.map(Self.importKey)) == Set(expected))
  }

  @Test(
    "RELRO, BIND_NOW and PIE across link modes",
    arguments: [
      (["-Wl,-z,now", "-Wl,-z,relro"], ElfFile.RelroLevel.full, true, "DYN", true),
      (["-Wl,-z,lazy", "-Wl,-z,relro"], ElfFile.RelroLevel.partial, false, "DYN", true),
      (["-Wl,-z,lazy", "-Wl,-z,norelro"], ElfFile.RelroLevel.none, false, "DYN", true),
      (["-no-pie", "-Wl,-z,lazy"], ElfFile.RelroLevel.partial, false, "EXEC", false),
      (["-fno-plt", "-Wl,-z,now"], ElfFile.RelroLevel.full, true, "DYN", true),
    ])
  func linkModes(flags: [String], relro: ElfFile.RelroLevel, bindNow: Bool, type: String, pie: Bool) throws {
    let fixture = try Support.versionedFixture(exeFlags: flags)
    defer { try? FileManager.default.removeItem(at: fixture.directory) }
    let executable = try ElfFile(path: fixture.executable)
    #expect(executable.relro == relro)
    #expect(executable.isBindNow == bindNow)
    #expect(executable.header.typeName == type)
    #expect(executable.isPIE == pie)
    let slots = executable.importSlots.filter { $0.symbol == "puts" }
    #expect(!slots.isEmpty)
    if flags.contains("-fno-plt") { #expect(slots.allSatisfy { $0.kind == .globalData }) }
    if relro == .partial { #expect(slots.contains { $0.kind == .jumpSlot && !$0.inRelro }) }
    if relro == .none { #expect(executable.importSlots.allSatisfy { !$0.inRelro }) }
    let expected = try Support.readelfRelocations(fixture.executable).filter {
      $0.type.hasSuffix("_JUMP_SLOT") || $0.type.hasSuffix("_GLOB_DAT")
    }
    #expect(Set(executable.importSlots.filter { $0.kind != .absolute }.map(Self.importKey)) == Set(expected))
  }

  @Test("without section headers, PT_DYNAMIC gives the same import slots", arguments: systemBinaries)
  func noSectionHeaders(path: String) throws {
    guard FileManager.default.fileExists(atPath: path) else {
      print("SKIPPED: \(path) is not installed")
      return
    }
    var data = try Data(contentsOf: URL(fileURLWithPath: path))
    // e_shoff = 0, e_shentsize = e_shnum = e_shstrndx = 0: what `sstrip` leaves.
    data.replaceSubrange(40..<48, with: [UInt8](repeating: 0, count: 8))
    data.replaceSubrange(58..<64, with: [UInt8](repeating: 0, count: 6))
    let directory = try Support.temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: directory) }
    let stripped = directory.appendingPathComponent("stripped").path
    _ = FileManager.default.createFile(atPath: stripped, contents: data)

    let original = try ElfFile(path: path)
    let file = try ElfFile(path: stripped)
    #expect(file.sections.isEmpty)
    #expect(file.neededLibraries == original.neededLibraries)
    #expect(file.soname == original.soname)
    #expect(file.isBindNow == original.isBindNow)
    #expect(file.relro == original.relro)
    #expect(Set(file.importSlots.map(Self.importKey)) == Set(original.importSlots.map(Self.importKey)))
    #expect(file.relocations.count == original.relocations.count)
  }

  @Test("an object file: REL-type, .rela.text against .symtab, no dynamic section")
  func objectFile() throws {
    let directory = try Support.temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: directory) }
    let object = try Support.compile(
      "#include <stdio.h>\nint main(void) { puts(\"x\"); return 0; }\n", named: "o.c", in: directory,
      output: "o.o", flags: ["-c", "-fPIC"])
    let file = try ElfFile(path: object)
    #expect(file.header.typeName == "REL")
    #expect(file.segments.isEmpty)
    #expect(file.dynamicSymbols.isEmpty)
    #expect(file.relocations.contains { $0.symbolName == "puts" && $0.sectionName == ".rela.text" })
    #expect(file.importSlots.isEmpty)
  }

  @Test("errors name the file and what failed")
  func errors() throws {
    let directory = try Support.temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: directory) }
    func error(_ path: String) -> ElfFileError? {
      do { _ = try ElfFile(path: path); return nil } catch { return error }
    }
    let empty = directory.appendingPathComponent("empty").path
    _ = FileManager.default.createFile(atPath: empty, contents: Data())
    let text = directory.appendingPathComponent("text").path
    _ = FileManager.default.createFile(atPath: text, contents: Data("hello, world\n".utf8))
    let ls = try Data(contentsOf: URL(fileURLWithPath: "/bin/ls"))
    let truncated = directory.appendingPathComponent("truncated").path
    _ = FileManager.default.createFile(atPath: truncated, contents: ls.prefix(1000))
    let shortHeader = directory.appendingPathComponent("short").path
    _ = FileManager.default.createFile(atPath: shortHeader, contents: ls.prefix(40))
    var badClass = ls.prefix(4096)
    badClass[4] = 7
    let badClassPath = directory.appendingPathComponent("class").path
    _ = FileManager.default.createFile(atPath: badClassPath, contents: badClass)

    #expect(error("/nonexistent/x") == .cannotOpen(path: "/nonexistent/x", errno: ENOENT))
    #expect(error(directory.path) == .isDirectory(path: directory.path))
    #expect(error("/dev/null") == .notRegularFile(path: "/dev/null"))
    #expect(error(empty) == .empty(path: empty))
    #expect(error(text) == .notELF(path: text))
    #expect(error(text)?.description == "\(text): not an ELF file (bad magic)")
    #expect(error(badClassPath) == .unsupportedClass(path: badClassPath, elfClass: 7))
    guard case .truncated = error(truncated) else {
      Issue.record("expected truncated, got \(String(describing: error(truncated)))")
      return
    }
    guard case .truncated = error(shortHeader) else {
      Issue.record("expected truncated, got \(String(describing: error(shortHeader)))")
      return
    }
    for failure in [error(empty), error(text), error(truncated), error(directory.path)] {
      let line = failure?.description ?? ""
      #expect(!line.contains("\n") && !line.isEmpty)
    }
  }
}
