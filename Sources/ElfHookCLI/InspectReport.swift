import ElfFileReader
import ElfHook

/// What `elfhook inspect` found, before it is printed as a table or encoded as JSON.
///
/// JSON shape (every key is always present; `null` where a value does not apply):
/// ```
/// {"pid": null | 1234,
///  "notes": ["…"],
///  "images": [{
///     "path": "/usr/bin/curl", "error": null | "why the image could not be read",
///     "type": "DYN", "machine": "x86-64", "pie": true, "bind_now": true, "relro": "full|partial|none",
///     "soname": null | "…", "runpath": null | "…", "rpath": null | "…",
///     "load_bias": null | "0x…", "needed": ["libc.so.6"],
///     "dependencies": null | [{"name": "libc.so.6", "path": null | "/lib/…", "via": null | "runpath|rpath|LD_LIBRARY_PATH|ld.so.cache|default path|path", "needed_by": "/usr/bin/curl"}],
///     "slots": [{"symbol": "puts", "version": null | "GLIBC_2.2.5", "version_library": null | "libc.so.6",
///                "type": "R_X86_64_JUMP_SLOT", "kind": "jump_slot|glob_dat|abs",
///                "offset": "0x4018", "relro": true,
///                "address": null | "0x…", "value": null | "0x…", "points_into": null | "/usr/lib/…/libc.so.6",
///                "hooked": null | false}],
///     "functions": [{"name": "SSL_read", "error": null | "why it could not be inspected",
///                    "address": null | "0x…", "size": null | 123, "symbol_table": null | "dynsym|symtab",
///                    "local": null | false, "got_reaches": null | "all|other_images|none",
///                    "attachable": null | true, "refusal": null | "ELFHOOK_ERR_…: why"}]}]}
/// ```
/// In a report of an image that failed (`error` not null) the other image keys are `null` and
/// `needed`/`slots` are empty.
struct InspectReport {
  var pid: Int32?
  var notes: [String] = []
  var images: [ImageReport] = []
}

struct ImageReport {
  var path: String
  var error: String?
  var file: ElfFile?
  var loadBias: UInt64?
  var dependencies: [DependencyReport]?
  var slots: [SlotReport] = []
  var functions: [FunctionReport] = []
}

/// One `--function`: the engine's inspection of it, and whether a GOT slot reaches it.
struct FunctionReport {
  var name: String
  var inspection: FunctionInspection?
  /// Why the function could not be inspected (not found, not this architecture).
  var error: String?
  /// "all", "other_images", or "none": which calls a GOT slot reaches.
  var gotReaches: String?

  init(name: String, path: String, file: ElfFile) {
    self.name = name
    do {
      let inspection = try FunctionInspection(symbol: name, inFile: path)
      self.inspection = inspection
      if !inspection.isExported {
        gotReaches = "none"
      } else {
        // The image's own calls go through its GOT only when it imports its own symbol.
        let ownSlot = file.importSlots.contains { $0.symbol == name && $0.kind != .absolute }
        gotReaches = ownSlot ? "all" : "other_images"
      }
    } catch {
      self.error = error.description
    }
  }

  var gotText: String {
    switch gotReaches {
    case "all": return "yes: every call (the image's own through its own slot)"
    case "other_images": return "other images' calls only; the image's own are direct"
    case "none": return "no (not exported)"
    default: return "-"
    }
  }
}

struct DependencyReport {
  var name: String
  var path: String?
  var via: String?
  var neededBy: String
}

struct SlotReport {
  var slot: ElfFile.ImportSlot
  var address: UInt64?
  var value: UInt64?
  var pointsInto: String?
  /// True when the value points into an image that neither is the importing image (an unresolved
  /// lazy slot) nor defines a symbol of that name: the slot was very likely rebound.
  var hooked: Bool?

  var kindName: String {
    switch slot.kind {
    case .jumpSlot: return "jump_slot"
    case .globalData: return "glob_dat"
    case .absolute: return "abs"
    }
  }
}

func hex(_ value: UInt64) -> String { "0x" + String(value, radix: 16) }
