import Foundation

/// Builds the C engine and the fixture programs of `Tests/Fixtures` with the system C compiler.
///
/// The engine is compiled straight from `CShims/CElfHook` into a plain C `libCElfHook.so`, the
/// way a C user builds it (scripts/build-c-library does the same), so the fixtures test the engine
/// without the Swift runtime around it.
enum EngineFixtures {
  static let root = ElfTestSupport.packageRoot
  static let sources = root.appendingPathComponent("Tests/Fixtures")
  static let include = root.appendingPathComponent("CShims/CElfHook/include")

  /// One way of building the fixtures: the relocation and binding shapes the engine must handle.
  struct Variant: CustomStringConvertible, Sendable {
    let name: String
    let programFlags: [String]
    let libraryFlags: [String]
    var description: String { name }

    static let all: [Variant] = [
      Variant(name: "lazy", programFlags: ["-Wl,-z,lazy"], libraryFlags: ["-Wl,-z,lazy"]),
      Variant(name: "bind-now-full-relro", programFlags: ["-Wl,-z,relro,-z,now"], libraryFlags: ["-Wl,-z,relro,-z,now"]),
      Variant(name: "no-relro", programFlags: ["-Wl,-z,norelro,-z,lazy"], libraryFlags: ["-Wl,-z,norelro,-z,lazy"]),
      Variant(name: "fno-plt", programFlags: ["-fno-plt"], libraryFlags: ["-fno-plt"]),
      Variant(name: "fno-plt-bind-now", programFlags: ["-fno-plt", "-Wl,-z,now"], libraryFlags: ["-fno-plt", "-Wl,-z,now"]),
      Variant(name: "non-pie", programFlags: ["-fno-pie", "-no-pie"], libraryFlags: []),
      Variant(name: "non-pie-bind-now", programFlags: ["-fno-pie", "-no-pie", "-Wl,-z,now"], libraryFlags: ["-Wl,-z,now"]),
      Variant(name: "non-pie-fno-plt", programFlags: ["-fno-pie", "-no-pie", "-fno-plt"], libraryFlags: ["-fno-plt"]),
    ]
  }

  /// The engine, built once per test run.
  static let engine: Result<URL, Error> = Result {
    let directory = try ElfTestSupport.temporaryDirectory()
    let files = try FileManager.default.contentsOfDirectory(
      atPath: root.appendingPathComponent("CShims/CElfHook/src").path
    ).filter { $0.hasSuffix(".c") }.sorted().map { "CShims/CElfHook/src/" + $0 }
    try cc(
      files.map { root.appendingPathComponent($0).path }
        + ["-shared", "-fPIC", "-O2", "-std=gnu11", "-D_GNU_SOURCE", "-Wall", "-Wextra", "-Werror",
           "-fvisibility=hidden", "-I", include.path, "-ldl", "-o", directory.appendingPathComponent("libCElfHook.so").path])
    return directory
  }

  /// Compiles with `cc`, throwing the compiler's message on failure.
  static func cc(_ arguments: [String]) throws {
    let result = try ElfTestSupport.run("/usr/bin/cc", arguments, timeout: 120)
    guard result.status == 0 else {
      throw ElfTestSupport.FixtureError(message: "cc \(arguments.joined(separator: " ")) failed:\n\(result.stderr)")
    }
  }

  /// Builds libtarget, libplugin, libversioned and the named programs for `variant`.
  static func build(_ variant: Variant, programs: [String]) throws -> URL {
    let engineDirectory = try engine.get()
    let directory = try ElfTestSupport.temporaryDirectory()
    let out = { (name: String) in directory.appendingPathComponent(name).path }
    let source = { (name: String) in sources.appendingPathComponent(name).path }
    let library = ["-shared", "-fPIC", "-Wall", "-Werror"] + variant.libraryFlags
    try cc(library + [source("target.c"), "-o", out("libtarget.so")])
    try cc(library + [source("plugin.c"), "-L", directory.path, "-ltarget", "-o", out("libplugin.so")])
    try cc(library + [source("versioned.c"), "-Wl,--version-script=" + source("versioned.map"), "-o", out("libversioned.so")])
    for program in programs {
      try cc(
        variant.programFlags + [
          "-Wall", "-Werror", "-g", "-pthread", "-I", include.path, "-I", sources.path, source(program + ".c"),
          "-L", directory.path, "-ltarget", "-lversioned", "-L", engineDirectory.path, "-lCElfHook",
          "-Wl,-rpath," + directory.path + ":" + engineDirectory.path, "-o", out(program),
        ])
    }
    return directory
  }
}
