import Foundation
import Testing

@testable import ElfFileReader
@testable import ElfHook

/// End-to-end tests of the `elfhook inspect` executable. They need it built: `swift build`
/// (or `ELFHOOK_BUILD_DIR=<scratch>/debug` when building with `--scratch-path`).
@Suite("elfhook inspect")
struct InspectTests {
  typealias Support = ElfTestSupport

  func elfhook() throws -> String {
    guard let path = Support.elfhookExecutable else {
      Issue.record(Comment(rawValue: Support.missingExecutableMessage))
      throw Support.FixtureError(message: Support.missingExecutableMessage)
    }
    return path
  }

  func json(_ text: String) throws -> [String: Any] {
    let object = try JSONSerialization.jsonObject(with: Data(text.utf8))
    return try #require(object as? [String: Any])
  }

  func slots(_ image: [String: Any]) -> [[String: Any]] { image["slots"] as? [[String: Any]] ?? [] }

  func key(_ slot: [String: Any]) -> Support.ReadelfRelocation {
    let offset = (slot["offset"] as? String).flatMap { UInt64($0.dropFirst(2), radix: 16) } ?? 0
    return Support.ReadelfRelocation(
      offset: offset, type: slot["type"] as? String ?? "", symbol: slot["symbol"] as? String ?? "",
      version: slot["version"] as? String)
  }

  @Test("--json on /usr/bin/curl lists exactly readelf's JUMP_SLOT and GLOB_DAT relocations")
  func curlJSON() throws {
    let result = try Support.run(try elfhook(), ["inspect", "--json", "/usr/bin/curl"])
    #expect(result.status == 0)
    #expect(result.stderr.isEmpty)
    let root = try json(result.stdout)
    let images = try #require(root["images"] as? [[String: Any]])
    #expect(images.count == 1)
    let image = images[0]
    #expect(image["path"] as? String == "/usr/bin/curl")
    #expect(image["type"] as? String == "DYN")
    #expect(image["pie"] as? Bool == true)
    #expect(image["bind_now"] as? Bool == true)
    #expect(image["relro"] as? String == "full")
    #expect(image["load_bias"] is NSNull)
    #expect((image["needed"] as? [String])?.contains("libcurl.so.4") == true)
    let expected = try Support.readelfRelocations("/usr/bin/curl").filter {
      $0.type.hasSuffix("_JUMP_SLOT") || $0.type.hasSuffix("_GLOB_DAT")
    }
    let actual = slots(image).map(key)
    #expect(actual.count == expected.count)
    #expect(Set(actual) == Set(expected))
    #expect(slots(image).allSatisfy { $0["relro"] as? Bool == true && $0["address"] is NSNull })
  }

  @Test("the table names the image, the binding mode and each slot")
  func curlTable() throws {
    let result = try Support.run(try elfhook(), ["inspect", "/usr/bin/curl"])
    #expect(result.status == 0)
    let lines = result.stdout.split(separator: "\n")
    #expect(lines.first?.contains("/usr/bin/curl: DYN (PIE)") == true)
    #expect(lines.first?.contains("BIND_NOW") == true)
    #expect(lines.first?.contains("RELRO full") == true)
    #expect(lines.contains { $0.contains("curl_easy_init") && $0.contains("R_X86_64_JUMP_SLOT") && $0.contains("CURL_OPENSSL_4") })
  }

  @Test("--data-pointers adds symbol-bearing R_X86_64_64; --deps resolves the DT_NEEDED tree")
  func dataPointersAndDeps() throws {
    let fixture = try Support.versionedFixture()
    defer { try? FileManager.default.removeItem(at: fixture.directory) }
    let without = try json(Support.run(try elfhook(), ["inspect", "--json", fixture.executable]).stdout)
    let with = try json(
      Support.run(try elfhook(), ["inspect", "--json", "--data-pointers", "--deps", fixture.executable]).stdout)
    let plain = slots((without["images"] as? [[String: Any]])?.first ?? [:])
    let image = (with["images"] as? [[String: Any]])?.first ?? [:]
    #expect(!plain.contains { $0["kind"] as? String == "abs" })
    #expect(slots(image).contains { $0["kind"] as? String == "abs" && $0["symbol"] as? String == "bar" })
    let dependencies = image["dependencies"] as? [[String: Any]] ?? []
    let libfix = dependencies.first { $0["name"] as? String == "libfix.so" }
    #expect(libfix?["path"] as? String == fixture.directory.appendingPathComponent("libfix.so").path)
    #expect(libfix?["via"] as? String == "runpath" || libfix?["via"] as? String == "rpath")
    #expect(dependencies.contains { $0["name"] as? String == "libc.so.6" && $0["path"] is String })
  }

  @Test("--pid lists mapped images with load bias, run-time addresses and slot values")
  func pidMode() throws {
    let sleeper = Process()
    sleeper.executableURL = URL(fileURLWithPath: "/bin/sleep")
    sleeper.arguments = ["30"]
    try sleeper.run()
    defer {
      kill(sleeper.processIdentifier, SIGKILL)
      sleeper.waitUntilExit()
    }
    usleep(200_000)
    let result = try Support.run(try elfhook(), ["inspect", "--json", "--pid", String(sleeper.processIdentifier)])
    #expect(result.status == 0, "\(result.stderr)")
    let root = try json(result.stdout)
    #expect(root["pid"] as? Int == Int(sleeper.processIdentifier))
    let images = root["images"] as? [[String: Any]] ?? []
    let sleep = try #require(images.first { ($0["path"] as? String)?.hasSuffix("/sleep") == true })
    #expect(sleep["load_bias"] is String)
    let libc = images.first { ($0["path"] as? String)?.hasSuffix("/libc.so.6") == true }
    #expect(libc != nil)
    let sleepSlots = slots(sleep)
    #expect(!sleepSlots.isEmpty)
    #expect(sleepSlots.allSatisfy { $0["address"] is String })
    // Same uid: /proc/PID/mem is readable, values are there, and resolved ones point into libc.
    let main = sleepSlots.first { $0["symbol"] as? String == "__libc_start_main" }
    #expect((main?["points_into"] as? String)?.hasSuffix("libc.so.6") == true)
    #expect(main?["hooked"] as? Bool == false)
    #expect(!images.flatMap(slots).contains { $0["hooked"] as? Bool == true })

    let text = try Support.run(try elfhook(), ["inspect", "--pid", String(sleeper.processIdentifier)])
    #expect(text.stdout.contains("load bias 0x"))
    #expect(text.stdout.contains("POINTS INTO"))
  }

  /// A preloaded library whose constructor points the main program's `puts` GOT slot at its own
  /// `replacement_puts`: `inspect --pid` must flag exactly that slot as hooked.
  static let hookSource = """
    #define _GNU_SOURCE
    #include <elf.h>
    #include <link.h>
    #include <string.h>
    #include <stdint.h>
    #include <sys/mman.h>
    #include <unistd.h>
    int replacement_puts(const char *s) { (void)s; return 0; }
    static int patch_main(struct dl_phdr_info *info, size_t size, void *data) {
      (void)size; (void)data;
      const ElfW(Dyn) *dyn = NULL;
      for (int i = 0; i < info->dlpi_phnum; i++)
        if (info->dlpi_phdr[i].p_type == PT_DYNAMIC) dyn = (const void *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
      if (!dyn) return 1;
      const ElfW(Rela) *rela = NULL; size_t size_bytes = 0; const ElfW(Sym) *symtab = NULL; const char *strtab = NULL;
      for (; dyn->d_tag != DT_NULL; dyn++) {
        if (dyn->d_tag == DT_JMPREL) rela = (const void *)dyn->d_un.d_ptr;
        if (dyn->d_tag == DT_PLTRELSZ) size_bytes = dyn->d_un.d_val;
        if (dyn->d_tag == DT_SYMTAB) symtab = (const void *)dyn->d_un.d_ptr;
        if (dyn->d_tag == DT_STRTAB) strtab = (const void *)dyn->d_un.d_ptr;
      }
      for (size_t i = 0; rela && i < size_bytes / sizeof *rela; i++) {
        const char *name = strtab + symtab[ELF64_R_SYM(rela[i].r_info)].st_name;
        if (strcmp(name, "puts") != 0) continue;
        void **slot = (void **)(info->dlpi_addr + rela[i].r_offset);
        long page = sysconf(_SC_PAGESIZE);
        uintptr_t start = (uintptr_t)slot & ~(uintptr_t)(page - 1);
        mprotect((void *)start, page, PROT_READ | PROT_WRITE);
        *slot = (void *)replacement_puts;
      }
      return 1;  /* the main program is the first entry */
    }
    __attribute__((constructor)) static void install(void) { dl_iterate_phdr(patch_main, NULL); }
    """

  @Test("--pid flags a GOT slot rebound into an image that does not define the symbol")
  func pidModeSeesHook() throws {
    let directory = try Support.temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: directory) }
    let hook = try Support.compile(
      Self.hookSource, named: "hook.c", in: directory, output: "libhook.so", flags: ["-shared", "-fPIC"])
    let program = try Support.compile(
      "#include <stdio.h>\n#include <unistd.h>\nint main(void) { puts(\"x\"); sleep(30); return 0; }\n",
      named: "prog.c", in: directory, output: "prog", flags: ["-Wl,-z,lazy"])
    let process = Process()
    process.executableURL = URL(fileURLWithPath: program)
    process.environment = ["LD_PRELOAD": hook]
    process.standardOutput = FileHandle.nullDevice
    try process.run()
    defer {
      kill(process.processIdentifier, SIGKILL)
      process.waitUntilExit()
    }
    usleep(300_000)
    let result = try Support.run(try elfhook(), ["inspect", "--json", "--pid", String(process.processIdentifier)])
    #expect(result.status == 0, "\(result.stderr)")
    let images = try json(result.stdout)["images"] as? [[String: Any]] ?? []
    let main = try #require(images.first { $0["path"] as? String == program })
    let puts = slots(main).first { $0["symbol"] as? String == "puts" }
    #expect(puts?["points_into"] as? String == hook)
    #expect(puts?["hooked"] as? Bool == true)
    let hooked = images.flatMap(slots).filter { $0["hooked"] as? Bool == true }
    #expect(hooked.count == 1, "\(hooked)")
    let text = try Support.run(try elfhook(), ["inspect", "--pid", String(process.processIdentifier)])
    #expect(text.stdout.split(separator: "\n").contains { $0.contains("puts") && $0.contains("HOOKED?") })
  }

  @Test("a missing process is one line on stderr and status 1")
  func missingProcess() throws {
    let result = try Support.run(try elfhook(), ["inspect", "--pid", "999999999"])
    #expect(result.status == 1)
    #expect(result.stderr.hasPrefix("elfhook: process 999999999"))
    #expect(result.stderr.split(separator: "\n").count == 1)
  }

  @Test("bad input files: one stderr line, status 1, no crash")
  func badInputs() throws {
    let directory = try Support.temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: directory) }
    let ls = try Data(contentsOf: URL(fileURLWithPath: "/bin/ls"))
    var inputs: [(path: String, expect: String)] = []
    func add(_ name: String, _ data: Data, _ expect: String) {
      let path = directory.appendingPathComponent(name).path
      _ = FileManager.default.createFile(atPath: path, contents: data)
      inputs.append((path, expect))
    }
    add("empty", Data(), "empty file")
    add("text", Data("just some text\n".utf8), "not an ELF file (bad magic)")
    for length in [1, 3, 4, 10, 16, 40, 63, 64, 200, 1000, 4096, 50_000, ls.count / 2, ls.count - 1] {
      add("ls-\(length)", ls.prefix(length), length < 4 ? "not an ELF file" : "truncated")
    }
    inputs.append((directory.path, "is a directory"))
    inputs.append((directory.appendingPathComponent("missing").path, "No such file or directory"))
    let unreadable = directory.appendingPathComponent("unreadable").path
    if getuid() != 0 {
      _ = FileManager.default.createFile(atPath: unreadable, contents: ls, attributes: [.posixPermissions: 0])
      inputs.append((unreadable, "Permission denied"))
    }
    for input in inputs {
      let result = try Support.run(try elfhook(), ["inspect", input.path])
      #expect(!result.signaled, "\(input.path) killed the process")
      #expect(result.status == 1, "\(input.path)")
      let lines = result.stderr.split(separator: "\n", omittingEmptySubsequences: false).filter { !$0.isEmpty }
      #expect(lines.count == 1, "\(input.path): \(result.stderr)")
      #expect(result.stderr.hasPrefix("elfhook: \(input.path): "), "\(result.stderr)")
      #expect(result.stderr.contains(input.expect), "\(result.stderr)")
      #expect(result.stdout.isEmpty)
    }
  }

  @Test("bad flags are usage errors; --help teaches with examples")
  func usage() throws {
    let bad = try Support.run(try elfhook(), ["inspect", "--no-such-flag", "/bin/ls"])
    #expect(bad.status == 64)
    #expect(!bad.signaled)
    let neither = try Support.run(try elfhook(), ["inspect"])
    #expect(neither.status == 64)
    let both = try Support.run(try elfhook(), ["inspect", "--pid", "1", "/bin/ls"])
    #expect(both.status == 64)
    for arguments in [["--help"], ["inspect", "--help"]] {
      let help = try Support.run(try elfhook(), arguments)
      #expect(help.status == 0)
      #expect(help.stdout.contains("Examples"))
      #expect(help.stdout.contains("elfhook inspect"))
    }
  }

  /// `--function` on the inline fixture program: a static function (attachable, no GOT slot), the
  /// refused prologues with their status, a missing name; the same file stripped loses its statics.
  @Test("--function says where a function is, whether a GOT slot reaches it and whether it can be attached")
  func functions() throws {
    let directory = try InlineHookFixtureTests.build(InlineHookFixtureTests.Variant.all[0], programs: ["inline_main"])
    defer { try? FileManager.default.removeItem(at: directory) }
    let program = directory.appendingPathComponent("inline_main").path
    let library = directory.appendingPathComponent("libinline.so").path
    let arguments = ["--function", "secret_double", "--function", "asm_unknown", "--function", "asm_loop_entry",
                     "--function", "no_such_function"]
    let table = try Support.run(try elfhook(), ["inspect"] + arguments + [program])
    #expect(table.status == 0, "\(table.stderr)")
    let rows = table.stdout.split(separator: "\n").map(String.init)
    #expect(rows.contains { $0.contains("secret_double") && $0.contains(".symtab (static)") && $0.contains("no (not exported)") && $0.hasSuffix("attachable") })
    #expect(rows.contains { $0.contains("asm_unknown") && $0.contains("refused: ELFHOOK_ERR_UNKNOWN_INSTRUCTION") && $0.contains("byte 0xc5") })
    #expect(rows.contains { $0.contains("asm_loop_entry") && $0.contains("ELFHOOK_ERR_JUMP_INTO_PATCH") })
    #expect(rows.contains { $0.contains("no_such_function") && $0.contains("ELFHOOK_ERR_SYMBOL_NOT_FOUND") })

    let exported = try Support.run(try elfhook(), ["inspect", "--json", "--function", "inline_add", library])
    let image = try #require((try json(exported.stdout)["images"] as? [[String: Any]])?.first)
    let function = try #require((image["functions"] as? [[String: Any]])?.first)
    #expect(function["symbol_table"] as? String == "dynsym")
    #expect(function["got_reaches"] as? String == "other_images", "libinline's own call to inline_add is direct")
    #expect(function["attachable"] as? Bool == true)
    #expect(function["refusal"] is NSNull)

    let stripped = directory.appendingPathComponent("inline_main_stripped").path
    try FileManager.default.copyItem(atPath: program, toPath: stripped)
    #expect(try Support.run("/usr/bin/strip", ["--strip-all", stripped]).status == 0)
    let gone = try Support.run(try elfhook(), ["inspect", "--function", "secret_double", stripped])
    #expect(gone.stdout.contains("ELFHOOK_ERR_SYMBOL_NOT_FOUND"), "\(gone.stdout)")

    let withPid = try Support.run(try elfhook(), ["inspect", "--pid", "1", "--function", "x"])
    #expect(withPid.status == 64)
  }
}
