import CLibElf

// The tables behind `ElfFile`'s symbols, versions, dynamic entries and relocations. Every index read
// from the file is checked before use; libelf's `gelf_get*` accessors check theirs against the data
// size too and return NULL, which is treated as "entry missing", never dereferenced.

extension ElfFileParser {
  typealias VersionMap = [UInt16: (name: String, isDefinition: Bool, file: String?)]

  struct Versions {
    var map: VersionMap = [:]
    var versym: UnsafeMutablePointer<Elf_Data>?
    var versymCount = 0
    var versymLink: Int?

    /// The version of symbol `index` of the table `.gnu.version` belongs to.
    func version(ofSymbol index: Int) -> ElfFile.SymbolVersion? {
      guard let versym, index >= 0, index < versymCount, index <= Int(Int32.max) else { return nil }
      var raw = GElf_Versym()
      guard gelf_getversym(versym, Int32(index), &raw) != nil else { return nil }
      let versionIndex = raw & 0x7fff
      guard versionIndex >= 2, let entry = map[versionIndex] else { return nil }
      return ElfFile.SymbolVersion(
        index: versionIndex, name: entry.name, isHidden: raw & 0x8000 != 0,
        isDefinition: entry.isDefinition, file: entry.file)
    }
  }

  // MARK: - Versions

  /// Reads `.gnu.version`, `.gnu.version_r` and `.gnu.version_d`.
  /// The corresponding libelf functions are `gelf_getverneed`, `gelf_getvernaux`, `gelf_getverdef`
  /// and `gelf_getverdaux`.
  func readVersions() throws(ElfFileError) -> Versions {
    var versions = Versions()
    for section in sections {
      switch section.type {
      case 0x6fff_ffff:  // SHT_GNU_versym
        guard versions.versym == nil, let data = try data(section: section.index) else { continue }
        versions.versym = data
        versions.versymCount = entryCount(data, type: ELF_T_HALF)
        versions.versymLink = Int(section.link)
      case 0x6fff_fffe:  // SHT_GNU_verneed
        guard let data = try data(section: section.index) else { continue }
        let link = Int(section.link)
        readVerneed(data, strings: { string(section: link, offset: $0) }, into: &versions.map)
      case 0x6fff_fffd:  // SHT_GNU_verdef
        guard let data = try data(section: section.index) else { continue }
        let link = Int(section.link)
        readVerdef(data, strings: { string(section: link, offset: $0) }, into: &versions.map)
      default:
        continue
      }
    }
    return versions
  }

  func readVerneed(
    _ data: UnsafeMutablePointer<Elf_Data>, strings: (UInt64) -> String?, into map: inout VersionMap
  ) {
    var offset = 0
    for _ in 0..<Self.maxChainSteps {
      guard offset >= 0, offset <= Int(Int32.max) else { return }
      var need = GElf_Verneed()
      guard gelf_getverneed(data, Int32(offset), &need) != nil else { return }
      let file = strings(UInt64(need.vn_file))
      var auxOffset = offset + Int(need.vn_aux)
      for _ in 0..<Int(need.vn_cnt) {
        guard auxOffset <= Int(Int32.max) else { break }
        var aux = GElf_Vernaux()
        guard gelf_getvernaux(data, Int32(auxOffset), &aux) != nil else { break }
        if let name = strings(UInt64(aux.vna_name)) {
          map[aux.vna_other & 0x7fff] = (name, false, file)
        }
        if aux.vna_next == 0 { break }
        auxOffset += Int(aux.vna_next)
      }
      if need.vn_next == 0 { return }
      offset += Int(need.vn_next)
    }
  }

  func readVerdef(
    _ data: UnsafeMutablePointer<Elf_Data>, strings: (UInt64) -> String?, into map: inout VersionMap
  ) {
    var offset = 0
    for _ in 0..<Self.maxChainSteps {
      guard offset >= 0, offset <= Int(Int32.max) else { return }
      var def = GElf_Verdef()
      guard gelf_getverdef(data, Int32(offset), &def) != nil else { return }
      let auxOffset = offset + Int(def.vd_aux)
      var aux = GElf_Verdaux()
      if def.vd_cnt > 0, auxOffset <= Int(Int32.max),
        gelf_getverdaux(data, Int32(auxOffset), &aux) != nil,
        let name = strings(UInt64(aux.vda_name))
      {
        map[def.vd_ndx & 0x7fff] = (name, true, nil)
      }
      if def.vd_next == 0 { return }
      offset += Int(def.vd_next)
    }
  }

  // MARK: - Symbols

  /// Reads one symbol of the table in section `table`; nil when the index is out of range.
  /// The corresponding libelf function is `gelf_getsym`.
  func symbol(
    _ data: UnsafeMutablePointer<Elf_Data>, count: Int, index: Int, strings: (UInt64) -> String?,
    versions: Versions?
  ) -> ElfFile.Symbol? {
    guard index >= 0, index < count, index <= Int(Int32.max) else { return nil }
    var sym = GElf_Sym()
    guard gelf_getsym(data, Int32(index), &sym) != nil else { return nil }
    let type = sym.st_info & 0xf
    let binding = sym.st_info >> 4
    return ElfFile.Symbol(
      index: index, name: index == 0 ? "" : strings(UInt64(sym.st_name)) ?? "",
      value: sym.st_value, size: sym.st_size, type: type, typeName: ElfNames.symbolType(type),
      binding: binding, bindingName: ElfNames.symbolBinding(binding),
      visibility: ElfNames.visibility(sym.st_other), sectionIndex: sym.st_shndx,
      version: versions?.version(ofSymbol: index))
  }

  mutating func readDynamicSymbols(versions: Versions) throws(ElfFileError) {
    guard let dynsymIndex, let data = try data(section: dynsymIndex) else { return }
    let count = entryCount(data, type: ELF_T_SYM)
    let link = Int(sections[dynsymIndex].link)
    let strings = { (offset: UInt64) in string(section: link, offset: offset) }
    let ownVersions = versions.versymLink == dynsymIndex ? versions : nil
    dynamicSymbols.reserveCapacity(count)
    for index in 0..<count {
      guard let symbol = symbol(data, count: count, index: index, strings: strings, versions: ownVersions)
      else { break }
      dynamicSymbols.append(symbol)
    }
  }

  // MARK: - Dynamic section

  /// Reads `DT_NEEDED`, `DT_SONAME`, `DT_RPATH`, `DT_RUNPATH`, `DT_FLAGS`, `DT_FLAGS_1` and
  /// `DT_BIND_NOW` from the `SHT_DYNAMIC` section. The corresponding libelf function is `gelf_getdyn`.
  mutating func readDynamic() throws(ElfFileError) {
    guard let section = sections.first(where: { $0.type == 6 }),
      let data = try data(section: section.index)
    else { return }
    let count = entryCount(data, type: ELF_T_DYN)
    let strings = Int(section.link)
    for index in 0..<min(count, Int(Int32.max)) {
      var dyn = GElf_Dyn()
      guard gelf_getdyn(data, Int32(index), &dyn) != nil else { break }
      if dyn.d_tag == 0 { return }  // DT_NULL
      apply(tag: dyn.d_tag, value: dyn.d_un.d_val) { [elf] in Self.string(elf: elf, section: strings, offset: $0) }
    }
  }

  /// Records one dynamic entry this reader keeps.
  mutating func apply(tag: Int64, value: UInt64, strings: (UInt64) -> String?) {
    switch tag {
    case 1:
      if let name = strings(value) { needed.append(name) }
    case 14: soname = strings(value)
    case 15: rpath = strings(value)
    case 29: runpath = strings(value)
    case 24: flags |= 0x8  // DT_BIND_NOW
    case 30: flags |= value
    case 0x6fff_fffb: flags1 |= value
    default: return
    }
  }

  // MARK: - Relocations

  /// Reads every `SHT_RELA` and `SHT_REL` section, naming each relocation's symbol from the
  /// section's linked symbol table. The corresponding libelf functions are `gelf_getrela` and `gelf_getrel`.
  mutating func readRelocations(versions: Versions) throws(ElfFileError) {
    for section in sections where section.type == 4 || section.type == 9 {
      guard let data = try data(section: section.index) else { continue }
      let isRela = section.type == 4
      let count = entryCount(data, type: isRela ? ELF_T_RELA : ELF_T_REL)
      let link = Int(section.link)
      // The linked symbol table: `.dynsym` (already read) or another SYMTAB/DYNSYM section.
      var table: (data: UnsafeMutablePointer<Elf_Data>, count: Int, strings: Int)?
      if link != dynsymIndex, link > 0, link < sections.count,
        sections[link].type == 2 || sections[link].type == 11,
        let tableData = try? self.data(section: link)
      {
        table = (tableData, entryCount(tableData, type: ELF_T_SYM), Int(sections[link].link))
      }
      relocations.reserveCapacity(relocations.count + count)
      for index in 0..<min(count, Int(Int32.max)) {
        var offset: UInt64
        var info: UInt64
        var addend: Int64 = 0
        if isRela {
          var rela = GElf_Rela()
          guard gelf_getrela(data, Int32(index), &rela) != nil else { break }
          (offset, info, addend) = (rela.r_offset, rela.r_info, rela.r_addend)
        } else {
          var rel = GElf_Rel()
          guard gelf_getrel(data, Int32(index), &rel) != nil else { break }
          (offset, info) = (rel.r_offset, rel.r_info)
        }
        // GElf always packs r_info the 64-bit way, also for ELFCLASS32 files.
        let symbolIndex = Int(info >> 32)
        let type = UInt32(truncatingIfNeeded: info)
        var name: String?
        var version: ElfFile.SymbolVersion?
        if symbolIndex != 0 {
          if link == dynsymIndex, symbolIndex < dynamicSymbols.count {
            name = dynamicSymbols[symbolIndex].name
            version = dynamicSymbols[symbolIndex].version
          } else if let table,
            let symbol = symbol(
              table.data, count: table.count, index: symbolIndex,
              strings: { string(section: table.strings, offset: $0) },
              versions: nil)
          {
            // A section symbol has no name of its own: readelf shows its section's, and so do we.
            if symbol.name.isEmpty, symbol.type == 3, Int(symbol.sectionIndex) < sections.count {
              name = sections[Int(symbol.sectionIndex)].name
            } else {
              name = symbol.name
            }
          }
        }
        relocations.append(
          ElfFile.Relocation(
            sectionName: section.name, offset: offset, type: type,
            typeName: ElfNames.relocationType(type, machine: header.machine),
            symbolIndex: symbolIndex, symbolName: name, symbolVersion: version, addend: addend))
      }
    }
  }
}
