import Foundation
import Testing

/// The engine's contract, checked by C programs linked with -lCElfHook, in every build variant.
@Suite("Rebinding from C, across the build matrix")
struct RebindFixtureTests {
  @Test("fishhook's contract: main program, dlopen'ed library, one image, chains, undo, filters", arguments: EngineFixtures.Variant.all)
  func contract(_ variant: EngineFixtures.Variant) throws {
    let directory = try EngineFixtures.build(variant, programs: ["rebind_main"])
    defer { try? FileManager.default.removeItem(at: directory) }
    let result = try ElfTestSupport.run(
      directory.appendingPathComponent("rebind_main").path, [directory.appendingPathComponent("libplugin.so").path])
    #expect(!result.signaled, "rebind_main died of a signal (\(variant)): \(result.stderr)")
    #expect(result.status == 0, "rebind_main failed (\(variant)):\n\(result.stderr)")
    #expect(result.stdout.contains("fixture passed"))
  }

  @Test("concurrent callers while rebinding and undo repeat", arguments: [
    EngineFixtures.Variant.all[0], EngineFixtures.Variant.all[1], EngineFixtures.Variant.all[5],
  ])
  func hammer(_ variant: EngineFixtures.Variant) throws {
    let directory = try EngineFixtures.build(variant, programs: ["hammer"])
    defer { try? FileManager.default.removeItem(at: directory) }
    let result = try ElfTestSupport.run(directory.appendingPathComponent("hammer").path, ["3000"], timeout: 120)
    #expect(!result.signaled, "hammer died of a signal (\(variant)): \(result.stderr)")
    #expect(result.status == 0, "hammer failed (\(variant)):\n\(result.stderr)")
    #expect(result.stdout.contains("3000 rebind/undo rounds"))
  }

  /// A library with a RUNPATH dlopen's a bare name: the same file must load with the engine's
  /// dlopen hook in between as without it, with and without a decoy in LD_LIBRARY_PATH, for
  /// RUNPATH and for the older DT_RPATH (searched before LD_LIBRARY_PATH).
  @Test("dlopen by bare name from a library with RUNPATH or RPATH loads the same file", arguments: [
    "--enable-new-dtags", "--disable-new-dtags",
  ])
  func bareNameDlopen(_ tags: String) throws {
    let engineDirectory = try EngineFixtures.engine.get()
    let directory = try ElfTestSupport.temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: directory) }
    let path = { (name: String) in directory.appendingPathComponent(name).path }
    let source = { (name: String) in EngineFixtures.sources.appendingPathComponent(name).path }
    try FileManager.default.createDirectory(atPath: path("private"), withIntermediateDirectories: true)
    try FileManager.default.createDirectory(atPath: path("decoy"), withIntermediateDirectories: true)
    try EngineFixtures.cc(["-shared", "-fPIC", "-DBARE_VALUE=1", source("bare.c"), "-o", path("private/libbare.so")])
    try EngineFixtures.cc(["-shared", "-fPIC", "-DBARE_VALUE=2", source("bare.c"), "-o", path("decoy/libbare.so")])
    try EngineFixtures.cc([
      "-shared", "-fPIC", source("loader.c"), "-Wl,\(tags),-rpath,$ORIGIN/private", "-o", path("libloader.so"),
    ])
    try EngineFixtures.cc([
      "-I", EngineFixtures.include.path, source("bare_main.c"), "-L", directory.path, "-lloader",
      "-L", engineDirectory.path, "-lCElfHook", "-Wl,-rpath," + directory.path + ":" + engineDirectory.path,
      "-o", path("bare_main"),
    ])
    for decoy in [false, true] {
      let environment = decoy ? ["LD_LIBRARY_PATH=" + path("decoy")] : []
      let plain = try ElfTestSupport.run("/usr/bin/env", environment + [path("bare_main")])
      let hooked = try ElfTestSupport.run("/usr/bin/env", environment + [path("bare_main"), "hook"])
      #expect(plain.status == 0 && hooked.status == 0, "\(plain.stderr)\(hooked.stderr)")
      #expect(plain.stdout.hasSuffix("libbare.so\n"), "without the engine: \(plain.stdout)")
      #expect(hooked.stdout == plain.stdout, "decoy \(decoy), \(tags): \(hooked.stdout) vs \(plain.stdout)")
    }
  }

  @Test("the C example builds and logs the fopen calls it makes")
  func cExample() throws {
    let engineDirectory = try EngineFixtures.engine.get()
    let directory = try ElfTestSupport.temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: directory) }
    let program = directory.appendingPathComponent("fopen_audit").path
    try EngineFixtures.cc([
      "-Wall", "-Werror", "-I", EngineFixtures.include.path,
      EngineFixtures.root.appendingPathComponent("examples/c/fopen_audit.c").path,
      "-L", engineDirectory.path, "-lCElfHook", "-Wl,-rpath," + engineDirectory.path, "-o", program,
    ])
    let result = try ElfTestSupport.run(program, ["/etc/passwd", "/nonexistent"])
    #expect(result.status == 0, "\(result.stderr)")
    #expect(result.stderr.contains("fopen(\"/etc/passwd\", \"r\") -> ok"))
    #expect(result.stderr.contains("fopen(\"/nonexistent\", \"r\") -> failed"))
    #expect(result.stderr.contains("/nonexistent: No such file or directory"), "errno must survive the hook")
    #expect(result.stdout.contains("2 fopen calls seen"))
  }

  /// The SwiftPM product `.build/<config>/libCElfHook.so` serves C programs too.
  @Test("a C program links against the SwiftPM-built libCElfHook.so")
  func swiftPMProduct() throws {
    let buildDirectory = URL(fileURLWithPath: try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"))
      .deletingLastPathComponent()
    let library = buildDirectory.appendingPathComponent("libCElfHook.so")
    try #require(
      FileManager.default.fileExists(atPath: library.path),
      "\(library.path) is missing: run `swift build` before `swift test` (scripts/test does)")
    let directory = try EngineFixtures.build(EngineFixtures.Variant.all[1], programs: [])
    defer { try? FileManager.default.removeItem(at: directory) }
    let program = directory.appendingPathComponent("rebind_main_spm").path
    try EngineFixtures.cc([
      "-I", EngineFixtures.include.path, "-I", EngineFixtures.sources.path,
      EngineFixtures.sources.appendingPathComponent("rebind_main.c").path,
      "-L", directory.path, "-ltarget", "-lversioned", "-L", buildDirectory.path, "-lCElfHook",
      "-Wl,-rpath," + directory.path + ":" + buildDirectory.path, "-o", program,
    ])
    let result = try ElfTestSupport.run(program, [directory.appendingPathComponent("libplugin.so").path])
    #expect(result.status == 0, "\(result.stderr)")
  }
}
