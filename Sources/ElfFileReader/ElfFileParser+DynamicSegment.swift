import CLibElf

// A file without a section header table (stripped with `sstrip`, or a crafted file) still has what
// the dynamic linker uses: `PT_DYNAMIC` and the tables its entries point at. This reads those the
// way the engine does at run time, so such a file still shows its needed libraries, symbols,
// versions and import slots. Relocations found this way carry the dynamic tag as their section name
// (`"DT_JMPREL"`, `"DT_RELA"`, `"DT_REL"`). Without `DT_HASH` the symbol count is not recorded in the
// file; then `dynamicSymbols` holds the symbols up to the highest index a relocation uses.

extension ElfFileParser {
  /// Reads `size` bytes at virtual address `address` as `type`, through the `PT_LOAD` that maps it;
  /// nil when no segment maps it or the range leaves the file.
  /// The corresponding libelf function is `elf_getdata_rawchunk`.
  func chunk(address: UInt64, size: UInt64?, type: Elf_Type) -> UnsafeMutablePointer<Elf_Data>? {
    for load in segments where load.type == 1 {
      guard address >= load.virtualAddress, address - load.virtualAddress < load.fileSize else { continue }
      let delta = address - load.virtualAddress
      let available = load.fileSize - delta
      let length = min(size ?? available, available)
      let (offset, overflow) = load.fileOffset.addingReportingOverflow(delta)
      guard !overflow, length > 0, offset < fileSize, length <= fileSize - offset,
        offset <= UInt64(Int64.max)
      else { return nil }
      return elf_getdata_rawchunk(elf, Int64(offset), Int(length), type)
    }
    return nil
  }

  mutating func readFromDynamicSegment() throws(ElfFileError) {
    guard let segment = segments.first(where: { $0.type == 2 }), segment.fileSize > 0,
      segment.fileOffset < fileSize, segment.fileSize <= fileSize - segment.fileOffset
    else { return }
    guard let dynamic = elf_getdata_rawchunk(elf, Int64(segment.fileOffset), Int(segment.fileSize), ELF_T_DYN)
    else {
      throw .malformed(path: path, detail: "PT_DYNAMIC cannot be read: \(libelfMessage())")
    }
    var entries: [(tag: Int64, value: UInt64)] = []
    for index in 0..<min(entryCount(dynamic, type: ELF_T_DYN), Int(Int32.max)) {
      var dyn = GElf_Dyn()
      guard gelf_getdyn(dynamic, Int32(index), &dyn) != nil, dyn.d_tag != 0 else { break }
      entries.append((dyn.d_tag, dyn.d_un.d_val))
    }
    func first(_ tag: Int64) -> UInt64? { entries.first { $0.tag == tag }?.value }

    // Strings: DT_STRTAB, DT_STRSZ bytes.
    let table = first(5).flatMap { chunk(address: $0, size: first(10), type: ELF_T_BYTE) }
    let strings = { (offset: UInt64) -> String? in
      guard let table, let base = table.pointee.d_buf, offset < UInt64(table.pointee.d_size) else { return nil }
      let bytes = UnsafeRawBufferPointer(start: base + Int(offset), count: table.pointee.d_size - Int(offset))
      guard let end = bytes.firstIndex(of: 0) else { return nil }
      return String(decoding: bytes[..<end], as: UTF8.self)
    }
    for entry in entries { apply(tag: entry.tag, value: entry.value, strings: strings) }

    // Relocations: DT_JMPREL (DT_PLTREL says REL or RELA), DT_RELA, DT_REL.
    var tables: [(name: String, address: UInt64, size: UInt64, isRela: Bool)] = []
    if let address = first(23), let size = first(2) {
      tables.append(("DT_JMPREL", address, size, first(20) != 17))
    }
    if let address = first(7), var size = first(8) {
      // Some linkers make DT_RELASZ cover .rela.plt too: do not read those entries twice.
      if let plt = tables.first, plt.address > address, plt.address - address < size { size = plt.address - address }
      tables.insert(("DT_RELA", address, size, true), at: 0)
    }
    if let address = first(17), let size = first(18) { tables.insert(("DT_REL", address, size, false), at: 0) }
    var raw: [(name: String, offset: UInt64, info: UInt64, addend: Int64)] = []
    for table in tables {
      let type = table.isRela ? ELF_T_RELA : ELF_T_REL
      guard let data = chunk(address: table.address, size: table.size, type: type) else { continue }
      for index in 0..<min(entryCount(data, type: type), Int(Int32.max)) {
        if table.isRela {
          var rela = GElf_Rela()
          guard gelf_getrela(data, Int32(index), &rela) != nil else { break }
          raw.append((table.name, rela.r_offset, rela.r_info, rela.r_addend))
        } else {
          var rel = GElf_Rel()
          guard gelf_getrel(data, Int32(index), &rel) != nil else { break }
          raw.append((table.name, rel.r_offset, rel.r_info, 0))
        }
      }
    }

    // Symbols: DT_SYMTAB; the count from DT_HASH's nchain, else the highest index relocations use.
    var symbolCount = (raw.map { Int(clamping: $0.info >> 32) }.max() ?? -1) + 1
    if let hash = first(4).flatMap({ chunk(address: $0, size: 8, type: ELF_T_WORD) }), hash.pointee.d_size >= 8,
      let words = hash.pointee.d_buf?.assumingMemoryBound(to: UInt32.self)
    {
      symbolCount = max(symbolCount, Int(words[1]))
    }
    let symbolSize = UInt64(max(1, gelf_fsize(elf, ELF_T_SYM, 1, 1)))
    var versions = Versions()
    let limit = min(symbolCount, Int(fileSize / symbolSize))
    if let address = first(0x6fff_fff0),  // DT_VERSYM
      let data = chunk(address: address, size: UInt64(limit) * 2, type: ELF_T_HALF)
    {
      versions.versym = data
      versions.versymCount = entryCount(data, type: ELF_T_HALF)
    }
    if let address = first(0x6fff_fffe), let data = chunk(address: address, size: nil, type: ELF_T_VNEED) {
      readVerneed(data, strings: strings, into: &versions.map)
    }
    if let address = first(0x6fff_fffc), let data = chunk(address: address, size: nil, type: ELF_T_VDEF) {
      readVerdef(data, strings: strings, into: &versions.map)
    }
    if limit > 0, let address = first(6),
      let data = chunk(address: address, size: UInt64(limit) * symbolSize, type: ELF_T_SYM)
    {
      let count = entryCount(data, type: ELF_T_SYM)
      for index in 0..<count {
        guard let symbol = symbol(data, count: count, index: index, strings: strings, versions: versions)
        else { break }
        dynamicSymbols.append(symbol)
      }
    }

    for entry in raw {
      let symbolIndex = Int(clamping: entry.info >> 32)
      let type = UInt32(truncatingIfNeeded: entry.info)
      let symbol = symbolIndex != 0 && symbolIndex < dynamicSymbols.count ? dynamicSymbols[symbolIndex] : nil
      relocations.append(
        ElfFile.Relocation(
          sectionName: entry.name, offset: entry.offset, type: type,
          typeName: ElfNames.relocationType(type, machine: header.machine), symbolIndex: symbolIndex,
          symbolName: symbol?.name, symbolVersion: symbol?.version, addend: entry.addend))
    }
  }
}
