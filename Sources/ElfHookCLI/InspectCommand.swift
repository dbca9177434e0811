import ArgumentParser
import ElfFileReader
import ElfHook
import Foundation

/// `elfhook inspect`: the import slots of an ELF file, or of every ELF image a running process has mapped.
struct InspectCommand: ParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "inspect",
    abstract: "Show an ELF image's import slots (the GOT words a rebinding patches), from a file or a running process.",
    discussion: """
      For a file, prints one header line (ELF type, PIE or not, BIND_NOW or lazy binding, RELRO full, \
      partial or none), the DT_NEEDED libraries, then one row per import slot: the symbol, its version \
      (from .gnu.version), the relocation type (R_X86_64_JUMP_SLOT for PLT calls, R_X86_64_GLOB_DAT for \
      address-taken and -fno-plt references), the slot's offset (its virtual address in the file) and \
      whether it lies in PT_GNU_RELRO (read-only after start-up). By default these are exactly the \
      JUMP_SLOT and GLOB_DAT relocations `readelf -rW` lists.

      With --pid, reads /proc/PID/maps, and for every mapped ELF image adds its load bias, each slot's \
      run-time address, the value the slot holds now (read from /proc/PID/mem when permitted) and the \
      image that value points into. A slot that points into an image that does not define its symbol \
      is flagged HOOKED?: something rebound it.

      With --json, prints one JSON object: {"pid": …, "notes": […], "images": [{"path", "error", \
      "type", "machine", "pie", "bind_now", "relro", "soname", "runpath", "rpath", "load_bias", \
      "needed", "dependencies", "slots": [{"symbol", "version", "version_library", "type", "kind", \
      "offset", "relro", "address", "value", "points_into", "hooked"}]}]}. \
      Every key is always present; numbers that are addresses are hex strings ("0x4018"); values \
      that do not apply are null.

      With --function NAME (repeatable, BINARY only), adds one row per function: where it is (its \
      address and size), which symbol table names it (.dynsym: exported; .symtab: not exported, gone \
      once stripped), whether a GOT slot reaches it (other images' calls to an exported function go \
      through their GOT; the image's own calls only when it has a slot for its own symbol, otherwise \
      they are direct and only an inline hook reaches them), and whether an inline hook (elfhook_attach) \
      could patch its first instructions, or the status and reason it would be refused.

      Examples:
        elfhook inspect /usr/bin/curl
        elfhook inspect --function SSL_read --function SSL_write /usr/bin/node
        elfhook inspect --deps --data-pointers /usr/lib/x86_64-linux-gnu/libssl.so.3
        elfhook inspect --json --pid $(pgrep -n nginx)
      """
  )

  @Flag(help: "Print one JSON object instead of tables.")
  var json = false

  @Flag(help: "Also list every library in the DT_NEEDED tree, resolved like the dynamic linker (file mode).")
  var deps = false

  @Flag(
    name: .customLong("data-pointers"),
    help: "Also list symbol-bearing absolute pointers in data (R_X86_64_64, R_AARCH64_ABS64).")
  var dataPointers = false

  @Option(
    name: .customLong("function"),
    help: ArgumentHelp(
      "Also say where this function is, whether a GOT slot reaches it and whether an inline hook can attach to it (repeatable; BINARY only).",
      valueName: "NAME"))
  var functions: [String] = []

  @Option(help: ArgumentHelp("Inspect the ELF images mapped by this running process.", valueName: "PID"))
  var pid: Int32?

  @Argument(help: ArgumentHelp("The ELF executable or shared library to read.", valueName: "BINARY"))
  var binary: String?

  func validate() throws {
    if pid == nil && binary == nil { throw ValidationError("Give a BINARY to read or --pid PID.") }
    if pid != nil && binary != nil { throw ValidationError("Give either a BINARY or --pid PID, not both.") }
    if let pid, pid <= 0 { throw ValidationError("--pid must be a positive process id.") }
    if pid != nil && deps { throw ValidationError("--deps applies to a BINARY, not to --pid.") }
    if pid != nil && !functions.isEmpty { throw ValidationError("--function applies to a BINARY, not to --pid.") }
  }

  func run() throws {
    let report: InspectReport
    if let pid {
      do {
        report = try ProcessInspector(pid: pid, includeDataPointers: dataPointers).report()
      } catch {
        throw CommandFailure.input(error.description)
      }
    } else if let binary {
      let file: ElfFile
      do {
        file = try ElfFile(path: binary)
      } catch {
        throw CommandFailure.input(error.description)
      }
      var image = ImageReport(path: binary, file: file)
      image.slots = file.importSlots.filter { dataPointers || $0.kind != .absolute }.map { SlotReport(slot: $0) }
      if deps { image.dependencies = LibraryResolver().resolveAll(root: file) }
      image.functions = functions.map { FunctionReport(name: $0, path: binary, file: file) }
      report = InspectReport(images: [image])
    } else {
      return
    }
    print(json ? report.jsonText() : report.text())
  }
}
