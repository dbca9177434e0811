import Foundation
import Testing

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
}
