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
///                "hooked": null | false}]}]}
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
