import ElfFileReader
import ElfHook

// The human-readable table `elfhook inspect` prints without `--json`.

extension InspectReport {
  func text() -> String {
    var lines: [String] = []
    if let pid { lines.append("process \(pid): \(images.count) mapped ELF images") }
    for note in notes { lines.append("note: \(note)") }
    for image in images {
      if !lines.isEmpty { lines.append("") }
      lines.append(contentsOf: image.textLines(showRuntime: pid != nil))
    }
    return lines.joined(separator: "\n")
  }
}

extension ImageReport {
  func textLines(showRuntime: Bool) -> [String] {
    imageLines(showRuntime: showRuntime) + (file == nil ? [] : functionLines())
  }

  private func imageLines(showRuntime: Bool) -> [String] {
    guard let file else { return ["\(path): cannot inspect: \(error ?? "unknown error")"] }
    var kind = file.header.typeName
    if file.isPIE { kind += " (PIE)" }
    var line = "\(path): \(kind) \(file.header.bits)-bit \(file.header.machineName)"
    line += ", " + (file.isBindNow ? "BIND_NOW" : "lazy binding")
    line += ", RELRO \(file.relro.rawValue)"
    if let loadBias { line += ", load bias \(hex(loadBias))" }
    var lines = [line]
    if let soname = file.soname { lines.append("  soname:  \(printable(soname))") }
    if let runpath = file.runpath { lines.append("  runpath: \(printable(runpath))") }
    if let rpath = file.rpath { lines.append("  rpath:   \(printable(rpath))") }
    let needed = file.neededLibraries.map(printable).joined(separator: ", ")
    lines.append("  needed:  " + (needed.isEmpty ? "(none)" : needed))
    if let dependencies {
      lines.append("  dependencies (resolved like the dynamic linker, breadth first):")
      for dependency in dependencies {
        let target = dependency.path.map { "\($0) (\(dependency.via ?? "?"))" } ?? "not found"
        lines.append("    \(dependency.name) => \(target)  [needed by \(dependency.neededBy)]")
      }
    }
    let counts = Dictionary(grouping: slots, by: { $0.kindName }).mapValues(\.count)
    let summary = ["jump_slot", "glob_dat", "abs"].compactMap { key in counts[key].map { "\(key) \($0)" } }
    lines.append("  import slots: \(slots.count)" + (summary.isEmpty ? "" : " (" + summary.joined(separator: ", ") + ")"))
    guard !slots.isEmpty else { return lines }
    var rows: [[String]] = []
    var heading = ["SYMBOL", "VERSION", "TYPE", "OFFSET", "RELRO"]
    if showRuntime { heading += ["ADDRESS", "VALUE", "POINTS INTO"] }
    rows.append(heading)
    for slot in slots {
      var row = [
        slot.slot.symbol.isEmpty ? "-" : printable(slot.slot.symbol), printable(slot.slot.version?.name ?? "-"),
        slot.slot.typeName, hex(slot.slot.offset), slot.slot.inRelro ? "yes" : "no",
      ]
      if showRuntime {
        row.append(slot.address.map(hex) ?? "-")
        row.append(slot.value.map(hex) ?? "-")
        var into = slot.pointsInto ?? "-"
        if slot.hooked == true { into += "  <- HOOKED? (does not define this symbol)" }
        row.append(into)
      }
      rows.append(row)
    }
    let widths = (0..<heading.count).map { column in rows.map { $0[column].count }.max() ?? 0 }
    for row in rows {
      let cells = row.enumerated().map { index, cell in
        index == row.count - 1 ? cell : cell + String(repeating: " ", count: widths[index] - cell.count)
      }
      lines.append("  " + cells.joined(separator: "  "))
    }
    return lines
  }
}

extension ImageReport {
  /// The `--function` rows: where, which symbol table, GOT reach, inline hook.
  func functionLines() -> [String] {
    guard !functions.isEmpty else { return [] }
    var rows = [["FUNCTION", "ADDRESS", "SIZE", "SYMBOLS", "GOT SLOT REACHES IT", "INLINE HOOK"]]
    for function in functions {
      guard let found = function.inspection else {
        rows.append([printable(function.name), "-", "-", "-", "-", function.error ?? "?"])
        continue
      }
      let table = found.isExported ? ".dynsym" : found.isLocal ? ".symtab (static)" : ".symtab"
      let inline = found.refusal.map { "refused: \($0.description)" } ?? "attachable"
      rows.append([
        printable(function.name), hex(found.address), found.size == 0 ? "?" : String(found.size), table,
        function.gotText, printable(inline),
      ])
    }
    let widths = (0..<rows[0].count).map { column in rows.map { $0[column].count }.max() ?? 0 }
    return ["  functions:"] + rows.map { row in
      "  " + row.enumerated().map { index, cell in
        index == row.count - 1 ? cell : cell + String(repeating: " ", count: widths[index] - cell.count)
      }.joined(separator: "  ")
    }
  }
}

/// Names from a malformed file may hold control characters; a table shows them as `?` so they cannot
/// drive the terminal. (JSON escapes them instead.)
func printable(_ text: String) -> String {
  String(String.UnicodeScalarView(text.unicodeScalars.map { $0.value < 0x20 || $0.value == 0x7f ? "?" : $0 }))
}
