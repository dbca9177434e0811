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
    guard let file else { return ["\(path): cannot inspect: \(error ?? "unknown error")"] }
    var kind = file.header.typeName
    if file.isPIE { kind += " (PIE)" }
    var line = "\(path): \(kind) \(file.header.bits)-bit \(file.header.machineName)"
    line += ", " + (file.isBindNow ? "BIND_NOW" : "lazy binding")
    line += ", RELRO \(file.relro.rawValue)"
    if let loadBias { line += ", load bias \(hex(loadBias))" }
    var lines = [line]
    if let soname = file.soname { lines.append("  soname:  \(soname)") }
    if let runpath = file.runpath { lines.append("  runpath: \(runpath)") }
    if let rpath = file.rpath { lines.append("  rpath:   \(rpath)") }
    lines.append("  needed:  " + (file.neededLibraries.isEmpty ? "(none)" : file.neededLibraries.joined(separator: ", ")))
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
        slot.slot.symbol.isEmpty ? "-" : slot.slot.symbol, slot.slot.version?.name ?? "-",
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
