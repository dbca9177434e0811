import ElfFileReader
import ElfHook

// JSON encoding of `InspectReport`: written by hand so the shape documented on `InspectReport` is
// exactly what comes out — every key present, nulls explicit, keys in a fixed order.

extension InspectReport {
  func jsonText() -> String {
    var out = "{\"pid\":" + (pid.map { String($0) } ?? "null")
    out += ",\"notes\":[" + notes.map(JSONText.string).joined(separator: ",") + "]"
    out += ",\"images\":[" + images.map { $0.jsonText() }.joined(separator: ",") + "]}"
    return out
  }
}

extension ImageReport {
  func jsonText() -> String {
    var fields: [(String, String)] = [("path", JSONText.string(path)), ("error", JSONText.optional(error))]
    fields.append(("type", JSONText.optional(file?.header.typeName)))
    fields.append(("machine", JSONText.optional(file?.header.machineName)))
    fields.append(("pie", file.map { $0.isPIE ? "true" : "false" } ?? "null"))
    fields.append(("bind_now", file.map { $0.isBindNow ? "true" : "false" } ?? "null"))
    fields.append(("relro", JSONText.optional(file?.relro.rawValue)))
    fields.append(("soname", JSONText.optional(file?.soname)))
    fields.append(("runpath", JSONText.optional(file?.runpath)))
    fields.append(("rpath", JSONText.optional(file?.rpath)))
    fields.append(("load_bias", JSONText.optional(loadBias.map(hex))))
    fields.append(("needed", "[" + (file?.neededLibraries ?? []).map(JSONText.string).joined(separator: ",") + "]"))
    fields.append(
      ("dependencies", dependencies.map { "[" + $0.map { $0.jsonText() }.joined(separator: ",") + "]" } ?? "null"))
    fields.append(("slots", "[" + slots.map { $0.jsonText() }.joined(separator: ",") + "]"))
    fields.append(("functions", "[" + functions.map { $0.jsonText() }.joined(separator: ",") + "]"))
    return JSONText.object(fields)
  }
}

extension FunctionReport {
  func jsonText() -> String {
    let found = inspection
    return JSONText.object([
      ("name", JSONText.string(name)),
      ("error", JSONText.optional(error)),
      ("address", JSONText.optional(found.map { hex($0.address) })),
      ("size", found.map { String($0.size) } ?? "null"),
      ("symbol_table", JSONText.optional(found.map { $0.isExported ? "dynsym" : "symtab" })),
      ("local", found.map { $0.isLocal ? "true" : "false" } ?? "null"),
      ("got_reaches", JSONText.optional(gotReaches)),
      ("attachable", found.map { $0.isAttachable ? "true" : "false" } ?? "null"),
      ("refusal", JSONText.optional(found?.refusal?.description)),
    ])
  }
}

extension DependencyReport {
  func jsonText() -> String {
    JSONText.object([
      ("name", JSONText.string(name)), ("path", JSONText.optional(path)), ("via", JSONText.optional(via)),
      ("needed_by", JSONText.string(neededBy)),
    ])
  }
}

extension SlotReport {
  func jsonText() -> String {
    JSONText.object([
      ("symbol", JSONText.string(slot.symbol)),
      ("version", JSONText.optional(slot.version?.name)),
      ("version_library", JSONText.optional(slot.version?.file)),
      ("type", JSONText.string(slot.typeName)),
      ("kind", JSONText.string(kindName)),
      ("offset", JSONText.string(hex(slot.offset))),
      ("relro", slot.inRelro ? "true" : "false"),
      ("address", JSONText.optional(address.map(hex))),
      ("value", JSONText.optional(value.map(hex))),
      ("points_into", JSONText.optional(pointsInto)),
      ("hooked", hooked.map { $0 ? "true" : "false" } ?? "null"),
    ])
  }
}

enum JSONText {
  static func object(_ fields: [(String, String)]) -> String {
    "{" + fields.map { string($0.0) + ":" + $0.1 }.joined(separator: ",") + "}"
  }

  static func optional(_ value: String?) -> String { value.map(string) ?? "null" }

  /// A JSON string literal: quotes, backslashes and control characters escaped (RFC 8259).
  static func string(_ value: String) -> String {
    var out = "\""
    for scalar in value.unicodeScalars {
      switch scalar {
      case "\"": out += "\\\""
      case "\\": out += "\\\\"
      case "\n": out += "\\n"
      case "\t": out += "\\t"
      case "\r": out += "\\r"
      case _ where scalar.value < 0x20:
        let digits = String(scalar.value, radix: 16)
        out += "\\u" + String(repeating: "0", count: 4 - digits.count) + digits
      default: out.unicodeScalars.append(scalar)
      }
    }
    return out + "\""
  }
}
