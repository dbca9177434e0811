// The value types an `ElfFile` is made of. Each keeps the raw number from the file next to the
// readable name, so callers can match on either and nothing is lost for values this reader does
// not know by name.

extension ElfFile {
  /// The ELF file header: what kind of image this is and for which machine.
  public struct Header: Hashable, Sendable {
    /// `EI_CLASS`: 32 or 64 (bits).
    public let bits: Int
    /// `EI_DATA`: true for little-endian (`ELFDATA2LSB`).
    public let isLittleEndian: Bool
    /// `e_type` as a number (`ET_EXEC` = 2, `ET_DYN` = 3, …).
    public let type: UInt16
    /// `e_type` as readelf names it without the prefix: `"NONE"`, `"REL"`, `"EXEC"`, `"DYN"`, `"CORE"`.
    public let typeName: String
    /// `e_machine` as a number (`EM_X86_64` = 62, `EM_AARCH64` = 183, `EM_386` = 3).
    public let machine: UInt16
    /// `e_machine` as a short name: `"x86-64"`, `"AArch64"`, `"i386"`.
    public let machineName: String
    /// `e_entry`: the entry point's virtual address (0 for most shared libraries).
    public let entry: UInt64
  }

  /// One program header (`Elf64_Phdr`): a piece of the file as the loader maps it.
  public struct Segment: Hashable, Sendable {
    /// `p_type` as a number.
    public let type: UInt32
    /// `p_type` without the `PT_` prefix: `"LOAD"`, `"DYNAMIC"`, `"GNU_RELRO"`, … or `"0x…"` when unknown.
    public let typeName: String
    /// `p_flags`: `PF_R` = 4, `PF_W` = 2, `PF_X` = 1.
    public let flags: UInt32
    /// `p_vaddr`: where the segment starts, relative to the load bias.
    public let virtualAddress: UInt64
    /// `p_memsz`: its size in memory.
    public let memorySize: UInt64
    /// `p_offset`: where it starts in the file.
    public let fileOffset: UInt64
    /// `p_filesz`: its size in the file.
    public let fileSize: UInt64
    /// `p_align`.
    public let alignment: UInt64

    /// The flags as readelf prints them: `"R E"`, `"RW "`.
    public var flagsDescription: String {
      (flags & 4 != 0 ? "R" : " ") + (flags & 2 != 0 ? "W" : " ") + (flags & 1 != 0 ? "E" : " ")
    }
  }

  /// One note of a `PT_NOTE` segment: who wrote it and its type. `"GNU"` 3 is the build ID; a `"Go"`
  /// note (type 4: its build ID) marks a program Go's linker made.
  public struct Note: Hashable, Sendable {
    /// The owner's name, without its NUL (`n_namesz` bytes).
    public let owner: String
    /// `n_type`.
    public let type: UInt32
  }

  /// One section header (`Elf64_Shdr`) with its name.
  public struct Section: Hashable, Sendable {
    /// The index in the section header table.
    public let index: Int
    /// The name from the section header string table (`""` when it cannot be read).
    public let name: String
    /// `sh_type` as a number.
    public let type: UInt32
    /// `sh_type` without the `SHT_` prefix: `"PROGBITS"`, `"RELA"`, `"DYNSYM"`, `"GNU_versym"`, … or `"0x…"`.
    public let typeName: String
    /// `sh_addr`: its virtual address (0 when not loaded).
    public let address: UInt64
    /// `sh_offset`: where it starts in the file.
    public let fileOffset: UInt64
    /// `sh_size`.
    public let size: UInt64
    /// `sh_flags` (`SHF_WRITE` = 1, `SHF_ALLOC` = 2, `SHF_EXECINSTR` = 4, …).
    public let flags: UInt64
    /// `sh_link`.
    public let link: UInt32
    /// `sh_info`.
    public let info: UInt32
    /// `sh_entsize`.
    public let entrySize: UInt64

    /// The flags as readelf's key letters: `"WA"`, `"AX"`, `"AI"`, …
    public var flagsDescription: String {
      let letters: [(UInt64, Character)] = [
        (0x1, "W"), (0x2, "A"), (0x4, "X"), (0x10, "M"), (0x20, "S"), (0x40, "I"), (0x80, "L"),
        (0x100, "O"), (0x200, "G"), (0x400, "T"), (0x800, "C"), (0x8000_0000, "E"),
      ]
      return String(letters.compactMap { flags & $0.0 != 0 ? $0.1 : nil })
    }
  }

  /// A symbol version from `.gnu.version` with its name from `.gnu.version_d` or `.gnu.version_r`.
  public struct SymbolVersion: Hashable, Sendable {
    /// The version index (`.gnu.version` entry without the hidden bit); always ≥ 2.
    public let index: UInt16
    /// The version name, e.g. `"GLIBC_2.2.5"`.
    public let name: String
    /// True when the hidden bit (0x8000) is set: a non-default version, printed `sym@VER`
    /// for a definition. A default definition is printed `sym@@VER`.
    public let isHidden: Bool
    /// True when the version comes from `.gnu.version_d` (the symbol is defined here); false when it is
    /// a requirement from `.gnu.version_r`.
    public let isDefinition: Bool
    /// For a requirement: the library that must provide it (`vn_file`, e.g. `"libc.so.6"`).
    public let file: String?

    /// `"@@VER"` for a default definition, `"@VER"` otherwise, as readelf appends it to a name.
    public var suffix: String { (isDefinition && !isHidden ? "@@" : "@") + name }
  }

  /// One entry of `.dynsym`.
  public struct Symbol: Hashable, Sendable {
    /// Its index in the symbol table.
    public let index: Int
    /// The name (`""` for the null symbol or an unreadable string).
    public let name: String
    /// `st_value`.
    public let value: UInt64
    /// `st_size`.
    public let size: UInt64
    /// `ELF_ST_TYPE(st_info)` as a number.
    public let type: UInt8
    /// The type as readelf names it: `"NOTYPE"`, `"OBJECT"`, `"FUNC"`, `"TLS"`, `"IFUNC"`, …
    public let typeName: String
    /// `ELF_ST_BIND(st_info)` as a number.
    public let binding: UInt8
    /// The binding as readelf names it: `"LOCAL"`, `"GLOBAL"`, `"WEAK"`, `"UNIQUE"`.
    public let bindingName: String
    /// `ELF_ST_VISIBILITY(st_other)` as readelf names it: `"DEFAULT"`, `"INTERNAL"`, `"HIDDEN"`, `"PROTECTED"`.
    public let visibility: String
    /// `st_shndx`: the section it is defined in; 0 (`SHN_UNDEF`) for an import, 0xfff1 for `SHN_ABS`.
    public let sectionIndex: UInt16
    /// The version, when `.gnu.version` gives one (index ≥ 2 and resolvable).
    public let version: SymbolVersion?

    /// True for an import: a symbol with section index `SHN_UNDEF`.
    public var isUndefined: Bool { sectionIndex == 0 }
  }

  /// One relocation from a `SHT_RELA` or `SHT_REL` section.
  public struct Relocation: Hashable, Sendable {
    /// The name of the section it comes from (`".rela.plt"`, `".rela.dyn"`, …).
    public let sectionName: String
    /// `r_offset`: for an executable or shared library, the virtual address of the patched word.
    public let offset: UInt64
    /// The relocation type number (`ELF64_R_TYPE(r_info)`).
    public let type: UInt32
    /// The type's name for this machine: `"R_X86_64_JUMP_SLOT"`, `"R_AARCH64_GLOB_DAT"`, … or
    /// `"R_<machine>_<number>"` when unknown.
    public let typeName: String
    /// The symbol index (`ELF64_R_SYM(r_info)`), 0 for none.
    public let symbolIndex: Int
    /// The symbol's name, `nil` for index 0 or an index outside the linked symbol table.
    public let symbolName: String?
    /// The symbol's version, when the linked table is `.dynsym` and `.gnu.version` gives one.
    public let symbolVersion: SymbolVersion?
    /// `r_addend`; 0 for `SHT_REL` sections.
    public let addend: Int64
  }

  /// What kind of GOT word an import slot is.
  public enum SlotKind: String, Hashable, Sendable {
    /// `R_*_JUMP_SLOT`: called through the PLT.
    case jumpSlot
    /// `R_*_GLOB_DAT`: the address of a symbol (address-taken functions, data, `-fno-plt` calls).
    case globalData
    /// `R_X86_64_64`/`R_AARCH64_ABS64` with a symbol: an absolute pointer in data, e.g. a function
    /// pointer in an initialized table. Not a GOT slot; hooking it changes a data pointer.
    case absolute
  }

  /// A word the dynamic linker fills with the address of an imported (or interposable) symbol.
  public struct ImportSlot: Hashable, Sendable {
    /// The symbol name.
    public let symbol: String
    /// The symbol's version, when it has one.
    public let version: SymbolVersion?
    /// Which kind of slot.
    public let kind: SlotKind
    /// The relocation type's name, e.g. `"R_X86_64_JUMP_SLOT"`.
    public let typeName: String
    /// The slot's virtual address (`r_offset`); add the load bias for the run-time address.
    public let offset: UInt64
    /// True when the slot lies inside `PT_GNU_RELRO` (read-only after relocation).
    public let inRelro: Bool
    /// The name of the relocation section it comes from.
    public let sectionName: String
  }

  /// How much of the GOT is read-only after start-up.
  public enum RelroLevel: String, Hashable, Sendable {
    /// `PT_GNU_RELRO` and `BIND_NOW`: every GOT slot is read-only after relocation.
    case full
    /// `PT_GNU_RELRO` without `BIND_NOW`: `.got` is read-only, `.got.plt` stays writable.
    case partial
    /// No `PT_GNU_RELRO`.
    case none
  }
}
