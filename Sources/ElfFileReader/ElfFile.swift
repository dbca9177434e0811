#if canImport(Glibc)
  import Glibc
#endif

/// An ELF file on disk, read with libelf: its header, segments, sections, dynamic symbols,
/// relocations and dynamic-section facts, and the import slots a rebinding would patch.
///
/// Everything is read once in ``init(path:)``; the value keeps no file descriptor or mapping open,
/// so it is cheap to pass around and `Sendable`. The reader never traps on malformed input: every
/// index into a table (symbol, version, string, section link) is bounds-checked, and what cannot be
/// read either throws an ``ElfFileError`` (for the structures everything else depends on) or is left
/// out (a relocation's symbol name, an unknown version).
///
/// ```swift
/// let ls = try ElfFile(path: "/bin/ls")
/// for slot in ls.importSlots where slot.kind == .jumpSlot {
///   print(slot.symbol, slot.version?.name ?? "", slot.offset, slot.inRelro)
/// }
/// ```
public struct ElfFile: Sendable {
  /// The path the file was opened with.
  public let path: String
  /// The file's size in bytes.
  public let fileSize: UInt64
  /// The ELF header. The corresponding libelf function is `gelf_getehdr`.
  public let header: Header
  /// The program headers, in file order. The corresponding libelf function is `gelf_getphdr`.
  public let segments: [Segment]
  /// The section headers, in file order (index 0, the null section, included); empty when the file
  /// has no section header table. The corresponding libelf function is `gelf_getshdr`.
  public let sections: [Section]
  /// The entries of `.dynsym` (entry 0 included), with versions from `.gnu.version`. For a file
  /// without section headers they come from `DT_SYMTAB` (see `ElfFileParser+DynamicSegment.swift`).
  /// The corresponding libelf functions are `gelf_getsym` and `gelf_getversym`.
  public let dynamicSymbols: [Symbol]
  /// Every relocation of every `SHT_RELA` and `SHT_REL` section, in file order.
  /// The corresponding libelf functions are `gelf_getrela` and `gelf_getrel`.
  public let relocations: [Relocation]
  /// The `DT_NEEDED` entries, in order. The corresponding libelf function is `gelf_getdyn`.
  public let neededLibraries: [String]
  /// `DT_RUNPATH`, unexpanded (may contain `$ORIGIN`). The corresponding libelf function is `gelf_getdyn`.
  public let runpath: String?
  /// `DT_RPATH`, unexpanded. The corresponding libelf function is `gelf_getdyn`.
  public let rpath: String?
  /// `DT_SONAME`. The corresponding libelf function is `gelf_getdyn`.
  public let soname: String?
  /// `DT_FLAGS` (0 when absent; a `DT_BIND_NOW` entry adds `DF_BIND_NOW`).
  public let dynamicFlags: UInt64
  /// `DT_FLAGS_1` (0 when absent).
  public let dynamicFlags1: UInt64
  /// True when the file has a `PT_INTERP` segment (it names a dynamic linker).
  public let hasInterpreter: Bool

  /// Reads the ELF file at `path`.
  ///
  /// - Parameter path: The file to read.
  /// - Throws: ``ElfFileError`` when the file cannot be opened, is not a regular file, is empty,
  ///   is not ELF, is truncated, has an unsupported class, byte order or machine, or when a header
  ///   table or a section this reader depends on is malformed.
  ///
  /// The corresponding libelf functions are `elf_version` and `elf_begin` (`ELF_C_READ_MMAP`).
  public init(path: String) throws(ElfFileError) {
    let parsed = try ElfFileParser.parse(path: path)
    self.path = path
    self.fileSize = parsed.fileSize
    self.header = parsed.header
    self.segments = parsed.segments
    self.sections = parsed.sections
    self.dynamicSymbols = parsed.dynamicSymbols
    self.relocations = parsed.relocations
    self.neededLibraries = parsed.needed
    self.runpath = parsed.runpath
    self.rpath = parsed.rpath
    self.soname = parsed.soname
    self.dynamicFlags = parsed.flags
    self.dynamicFlags1 = parsed.flags1
    self.hasInterpreter = segments.contains { $0.type == 3 }
  }

  /// The virtual address range of `PT_GNU_RELRO`, as the file states it (not rounded to pages),
  /// or `nil` when the file has none. glibc protects `[pageDown(start), pageDown(end))`.
  public var relroRange: Range<UInt64>? {
    guard let relro = segments.first(where: { $0.type == 0x6474_e552 }) else { return nil }
    let (end, overflow) = relro.virtualAddress.addingReportingOverflow(relro.memorySize)
    return relro.virtualAddress..<(overflow ? UInt64.max : end)
  }

  /// True when the dynamic linker resolves every symbol at load time: `DT_FLAGS` has `DF_BIND_NOW`
  /// or `DT_FLAGS_1` has `DF_1_NOW` (a `DT_BIND_NOW` entry sets the former).
  public var isBindNow: Bool { dynamicFlags & 0x8 != 0 || dynamicFlags1 & 0x1 != 0 }

  /// True for a position-independent executable: `DT_FLAGS_1` has `DF_1_PIE`, or (for older linkers)
  /// the file is `ET_DYN` with a `PT_INTERP` segment and no `DT_SONAME`.
  public var isPIE: Bool {
    if dynamicFlags1 & 0x0800_0000 != 0 { return true }
    return header.type == 3 && hasInterpreter && soname == nil
  }

  /// `full`, `partial` or `none`: see ``RelroLevel``.
  public var relro: RelroLevel {
    guard relroRange != nil else { return .none }
    return isBindNow ? .full : .partial
  }

  /// The lowest `PT_LOAD` virtual address, rounded down to `pageSize`: subtract it from the address
  /// of the first mapping of the file to get the load bias. 0 when the file has no `PT_LOAD`.
  public func lowestLoadAddress(pageSize: UInt64 = 4096) -> UInt64 {
    let lowest = segments.filter { $0.type == 1 }.map(\.virtualAddress).min() ?? 0
    let mask = pageSize > 0 && pageSize & (pageSize - 1) == 0 ? pageSize - 1 : 4095
    return lowest & ~mask
  }

  /// The virtual address range the `PT_LOAD` segments cover, from the lowest `p_vaddr` to the highest
  /// `p_vaddr + p_memsz` (`.bss` included), unbiased; nil when the file has no `PT_LOAD`.
  public var loadedAddressRange: Range<UInt64>? {
    let loads = segments.filter { $0.type == 1 }
    guard let low = loads.map(\.virtualAddress).min() else { return nil }
    let high = loads.map { $0.virtualAddress.addingReportingOverflow($0.memorySize).partialValue }.max() ?? low
    return low..<max(low, high)
  }

  /// The relocations a GOT rebinding would patch: every `R_*_JUMP_SLOT` and `R_*_GLOB_DAT` (the same
  /// entries `readelf -r` lists, with or without a symbol), and every symbol-bearing `R_X86_64_64` /
  /// `R_AARCH64_ABS64` / `R_386_32` (kind ``SlotKind/absolute``; filter on ``ImportSlot/kind`` to
  /// leave them out). A slot whose symbol cannot be named has `symbol == ""`.
  public var importSlots: [ImportSlot] {
    let relro = relroRange
    return relocations.compactMap { relocation -> ImportSlot? in
      guard let kind = ElfNames.slotKind(relocation.type, machine: header.machine) else { return nil }
      let symbol = relocation.symbolName ?? ""
      if kind == .absolute && symbol.isEmpty { return nil }
      return ImportSlot(
        symbol: symbol, version: relocation.symbolVersion, kind: kind,
        typeName: relocation.typeName, offset: relocation.offset,
        inRelro: relro?.contains(relocation.offset) ?? false, sectionName: relocation.sectionName)
    }
  }
}
