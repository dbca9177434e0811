import Foundation
import TestSupport
import Testing

@testable import ElfFileReader
@testable import ElfHook

/// Helpers shared by the ElfFile, inspect and fuzz suites: running tools, parsing readelf,
/// compiling fixtures.
enum ElfTestSupport {
  struct RunResult {
    var status: Int32
    var signaled: Bool
    var stdout: String
    var stderr: String
  }

  /// Runs `executable` with `arguments` to completion (``ProgramRun``: output captured through
  /// files, killed and thrown about after `timeout` seconds).
  static func run(_ executable: String, _ arguments: [String], timeout: TimeInterval = 60) throws -> RunResult {
    let run = try ProgramRun.run([executable] + arguments, timeout: timeout)
    return RunResult(
      status: run.status, signaled: run.terminatedBySignal, stdout: run.stdoutText, stderr: run.stderr)
  }

  /// A fresh directory on disk (compiled fixtures run from it); the caller removes it.
  static func temporaryDirectory() throws -> URL {
    try TemporaryDirectory("tests", inSharedMemory: false).url
  }

  /// The package root.
  static var packageRoot: URL { BuiltProducts.packageRoot }

  /// The built `elfhook` executable (``BuiltProducts``).
  static var elfhookExecutable: String? { BuiltProducts.elfhook }

  static let missingExecutableMessage =
    "the elfhook executable was not found: run `swift build` first (or set ELFHOOK_BUILD_DIR to the directory that holds it)"

  // MARK: - readelf

  /// One relocation line of `readelf -rW`.
  struct ReadelfRelocation: Hashable, CustomStringConvertible {
    var offset: UInt64
    var type: String
    var symbol: String
    var version: String?
    var description: String { "\(String(offset, radix: 16)) \(type) \(symbol)@\(version ?? "")" }
  }

  /// Parses `readelf -rW FILE`: every relocation line.
  static func readelfRelocations(_ path: String) throws -> [ReadelfRelocation] {
    let result = try run("/usr/bin/readelf", ["-rW", path])
    var relocations: [ReadelfRelocation] = []
    for line in result.stdout.split(separator: "\n") {
      let fields = line.split(separator: " ", omittingEmptySubsequences: true)
      guard fields.count >= 3, fields[2].hasPrefix("R_"), let offset = UInt64(fields[0], radix: 16),
        UInt64(fields[1], radix: 16) != nil
      else { continue }
      var symbol = ""
      var version: String?
      // RELA: offset info type value name + addend (without a symbol: offset info type addend).
      // REL:  offset info type value name          (without a symbol: offset info type).
      if fields.count == 5 || fields.count >= 7 {
        let (name, ver) = splitVersion(String(fields[4]))
        symbol = name
        version = ver
      }
      relocations.append(ReadelfRelocation(offset: offset, type: String(fields[2]), symbol: symbol, version: version))
    }
    return relocations
  }

  /// `"puts@GLIBC_2.2.5"` → ("puts", "GLIBC_2.2.5"); `"f@@V2"` → ("f", "V2").
  static func splitVersion(_ text: String) -> (String, String?) {
    guard let at = text.firstIndex(of: "@") else { return (text, nil) }
    let name = String(text[..<at])
    let version = text[at...].drop(while: { $0 == "@" })
    return (name, version.isEmpty ? nil : String(version))
  }

  /// One line of `readelf --dyn-syms -W`.
  struct ReadelfSymbol: Hashable {
    var index: Int
    var value: UInt64
    var size: UInt64
    var type: String
    var binding: String
    var visibility: String
    var section: String
    var name: String
  }

  static func readelfDynamicSymbols(_ path: String) throws -> [ReadelfSymbol] {
    let result = try run("/usr/bin/readelf", ["--dyn-syms", "-W", path])
    var symbols: [ReadelfSymbol] = []
    for line in result.stdout.split(separator: "\n") {
      let fields = line.split(separator: " ", omittingEmptySubsequences: true)
      guard fields.count >= 7, fields[0].hasSuffix(":"), let index = Int(fields[0].dropLast()),
        let value = UInt64(fields[1], radix: 16)
      else { continue }
      // Size is decimal, or hex with 0x for large values.
      let sizeText = String(fields[2])
      let size = sizeText.hasPrefix("0x") ? UInt64(sizeText.dropFirst(2), radix: 16) : UInt64(sizeText)
      symbols.append(
        ReadelfSymbol(
          index: index, value: value, size: size ?? 0, type: String(fields[3]), binding: String(fields[4]),
          visibility: String(fields[5]), section: String(fields[6]),
          name: fields.count >= 8 ? String(fields[7]) : ""))
    }
    return symbols
  }

  // MARK: - Fixtures

  /// Compiles `source` (C) with `cc` into `directory/output` with extra `flags`; throws with the
  /// compiler's message on failure.
  @discardableResult
  static func compile(
    _ source: String, named name: String, in directory: URL, output: String, flags: [String]
  ) throws -> String {
    let sourceURL = directory.appendingPathComponent(name)
    try source.write(to: sourceURL, atomically: true, encoding: .utf8)
    let outputPath = directory.appendingPathComponent(output).path
    let result = try run("/usr/bin/cc", [sourceURL.path, "-o", outputPath] + flags)
    guard result.status == 0 else {
      throw FixtureError(message: "cc \(name) failed: \(result.stderr)")
    }
    return outputPath
  }

  struct FixtureError: Error, CustomStringConvertible {
    var message: String
    var description: String { message }
  }

  /// A shared library with symbol versions (`foo@VERS_1`, `foo@@VERS_2`, `bar@@VERS_2`) and an
  /// executable linked against it that calls `foo`, `bar` and `puts`, built with `exeFlags`.
  static func versionedFixture(exeFlags: [String] = []) throws -> (directory: URL, library: String, executable: String) {
    let directory = try temporaryDirectory()
    let script = directory.appendingPathComponent("vers.map")
    try "VERS_1 { global: foo; local: *; };\nVERS_2 { global: foo; bar; } VERS_1;\n"
      .write(to: script, atomically: true, encoding: .utf8)
    let library = try compile(
      """
      int foo_old(int x) { return x + 1; }
      int foo_new(int x) { return x + 2; }
      int bar(int x) { return x * 2; }
      __asm__(".symver foo_old, foo@VERS_1");
      __asm__(".symver foo_new, foo@@VERS_2");
      """, named: "libfix.c", in: directory, output: "libfix.so",
      flags: ["-shared", "-fPIC", "-Wl,--version-script=" + script.path])
    let executable = try compile(
      """
      #include <stdio.h>
      int foo(int); int bar(int);
      int (*pointer)(int) = bar;
      int main(void) { puts("fixture"); return foo(1) + pointer(2) + bar(3); }
      """, named: "main.c", in: directory, output: "main",
      flags: ["-L" + directory.path, "-lfix", "-Wl,-rpath,$ORIGIN"] + exeFlags)
    return (directory, library, executable)
  }
}
