// Readable names for the numbers in an ELF file, as <elf.h> and readelf spell them.

enum ElfNames {
  static let machineX86_64: UInt16 = 62
  static let machineAArch64: UInt16 = 183
  static let machine386: UInt16 = 3

  static func hex<T: BinaryInteger>(_ value: T) -> String {
    "0x" + String(value, radix: 16)
  }

  static func fileType(_ type: UInt16) -> String {
    switch type {
    case 0: return "NONE"
    case 1: return "REL"
    case 2: return "EXEC"
    case 3: return "DYN"
    case 4: return "CORE"
    default: return hex(type)
    }
  }

  static func machine(_ machine: UInt16) -> String {
    switch machine {
    case machineX86_64: return "x86-64"
    case machineAArch64: return "AArch64"
    case machine386: return "i386"
    default: return "machine \(machine)"
    }
  }

  static func segmentType(_ type: UInt32) -> String {
    switch type {
    case 0: return "NULL"
    case 1: return "LOAD"
    case 2: return "DYNAMIC"
    case 3: return "INTERP"
    case 4: return "NOTE"
    case 5: return "SHLIB"
    case 6: return "PHDR"
    case 7: return "TLS"
    case 0x6474_e550: return "GNU_EH_FRAME"
    case 0x6474_e551: return "GNU_STACK"
    case 0x6474_e552: return "GNU_RELRO"
    case 0x6474_e553: return "GNU_PROPERTY"
    default: return hex(type)
    }
  }

  static func sectionType(_ type: UInt32) -> String {
    switch type {
    case 0: return "NULL"
    case 1: return "PROGBITS"
    case 2: return "SYMTAB"
    case 3: return "STRTAB"
    case 4: return "RELA"
    case 5: return "HASH"
    case 6: return "DYNAMIC"
    case 7: return "NOTE"
    case 8: return "NOBITS"
    case 9: return "REL"
    case 10: return "SHLIB"
    case 11: return "DYNSYM"
    case 14: return "INIT_ARRAY"
    case 15: return "FINI_ARRAY"
    case 16: return "PREINIT_ARRAY"
    case 17: return "GROUP"
    case 18: return "SYMTAB_SHNDX"
    case 19: return "RELR"
    case 0x6fff_fff5: return "GNU_ATTRIBUTES"
    case 0x6fff_fff6: return "GNU_HASH"
    case 0x6fff_fff7: return "GNU_LIBLIST"
    case 0x6fff_fffd: return "VERDEF"
    case 0x6fff_fffe: return "VERNEED"
    case 0x6fff_ffff: return "VERSYM"
    default: return hex(type)
    }
  }

  static func symbolType(_ type: UInt8) -> String {
    switch type {
    case 0: return "NOTYPE"
    case 1: return "OBJECT"
    case 2: return "FUNC"
    case 3: return "SECTION"
    case 4: return "FILE"
    case 5: return "COMMON"
    case 6: return "TLS"
    case 10: return "IFUNC"
    default: return "<\(type)>"
    }
  }

  static func symbolBinding(_ binding: UInt8) -> String {
    switch binding {
    case 0: return "LOCAL"
    case 1: return "GLOBAL"
    case 2: return "WEAK"
    case 10: return "UNIQUE"
    default: return "<\(binding)>"
    }
  }

  static func visibility(_ other: UInt8) -> String {
    ["DEFAULT", "INTERNAL", "HIDDEN", "PROTECTED"][Int(other & 3)]
  }

  /// The relocation type's name on `machine`, e.g. `R_X86_64_JUMP_SLOT`.
  static func relocationType(_ type: UInt32, machine: UInt16) -> String {
    switch machine {
    case machineX86_64:
      if let name = x86_64Relocations[type] { return "R_X86_64_" + name }
      return "R_X86_64_\(type)"
    case machineAArch64:
      if let name = aarch64Relocations[type] { return "R_AARCH64_" + name }
      return "R_AARCH64_\(type)"
    case machine386:
      if let name = i386Relocations[type] { return "R_386_" + name }
      return "R_386_\(type)"
    default:
      return "R_\(machine)_\(type)"
    }
  }

  /// Which import-slot kind a relocation type is on `machine`, if any.
  static func slotKind(_ type: UInt32, machine: UInt16) -> ElfFile.SlotKind? {
    switch (machine, type) {
    case (machineX86_64, 7), (machineAArch64, 1026), (machine386, 7): return .jumpSlot
    case (machineX86_64, 6), (machineAArch64, 1025), (machine386, 6): return .globalData
    case (machineX86_64, 1), (machineAArch64, 257), (machine386, 1): return .absolute
    default: return nil
    }
  }

  static let x86_64Relocations: [UInt32: String] = [
    0: "NONE", 1: "64", 2: "PC32", 3: "GOT32", 4: "PLT32", 5: "COPY", 6: "GLOB_DAT",
    7: "JUMP_SLOT", 8: "RELATIVE", 9: "GOTPCREL", 10: "32", 11: "32S", 12: "16", 13: "PC16",
    14: "8", 15: "PC8", 16: "DTPMOD64", 17: "DTPOFF64", 18: "TPOFF64", 19: "TLSGD", 20: "TLSLD",
    21: "DTPOFF32", 22: "GOTTPOFF", 23: "TPOFF32", 24: "PC64", 25: "GOTOFF64", 26: "GOTPC32",
    27: "GOT64", 28: "GOTPCREL64", 29: "GOTPC64", 30: "GOTPLT64", 31: "PLTOFF64", 32: "SIZE32",
    33: "SIZE64", 34: "GOTPC32_TLSDESC", 35: "TLSDESC_CALL", 36: "TLSDESC", 37: "IRELATIVE",
    38: "RELATIVE64", 41: "GOTPCRELX", 42: "REX_GOTPCRELX",
  ]

  static let aarch64Relocations: [UInt32: String] = [
    0: "NONE", 257: "ABS64", 258: "ABS32", 259: "ABS16", 260: "PREL64", 261: "PREL32",
    262: "PREL16", 263: "MOVW_UABS_G0", 264: "MOVW_UABS_G0_NC", 265: "MOVW_UABS_G1",
    266: "MOVW_UABS_G1_NC", 267: "MOVW_UABS_G2", 268: "MOVW_UABS_G2_NC", 269: "MOVW_UABS_G3",
    270: "MOVW_SABS_G0", 271: "MOVW_SABS_G1", 272: "MOVW_SABS_G2", 273: "LD_PREL_LO19",
    274: "ADR_PREL_LO21", 275: "ADR_PREL_PG_HI21", 276: "ADR_PREL_PG_HI21_NC", 277: "ADD_ABS_LO12_NC",
    278: "LDST8_ABS_LO12_NC", 279: "TSTBR14", 280: "CONDBR19", 282: "JUMP26", 283: "CALL26",
    284: "LDST16_ABS_LO12_NC", 285: "LDST32_ABS_LO12_NC", 286: "LDST64_ABS_LO12_NC",
    299: "LDST128_ABS_LO12_NC", 309: "GOT_LD_PREL19", 311: "ADR_GOT_PAGE", 312: "LD64_GOT_LO12_NC",
    313: "LD64_GOTPAGE_LO15", 512: "TLSGD_ADR_PREL21", 513: "TLSGD_ADR_PAGE21", 514: "TLSGD_ADD_LO12_NC",
    541: "TLSIE_ADR_GOTTPREL_PAGE21", 542: "TLSIE_LD64_GOTTPREL_LO12_NC", 549: "TLSLE_ADD_TPREL_HI12",
    551: "TLSLE_ADD_TPREL_LO12_NC", 560: "TLSDESC_LD_PREL19", 561: "TLSDESC_ADR_PREL21",
    562: "TLSDESC_ADR_PAGE21", 563: "TLSDESC_LD64_LO12", 564: "TLSDESC_ADD_LO12", 569: "TLSDESC_CALL",
    1024: "COPY", 1025: "GLOB_DAT", 1026: "JUMP_SLOT", 1027: "RELATIVE", 1028: "TLS_DTPMOD64",
    1029: "TLS_DTPREL64", 1030: "TLS_TPREL64", 1031: "TLSDESC", 1032: "IRELATIVE",
  ]

  static let i386Relocations: [UInt32: String] = [
    0: "NONE", 1: "32", 2: "PC32", 3: "GOT32", 4: "PLT32", 5: "COPY", 6: "GLOB_DAT", 7: "JUMP_SLOT",
    8: "RELATIVE", 9: "GOTOFF", 10: "GOTPC", 11: "32PLT", 14: "TLS_TPOFF", 15: "TLS_IE", 16: "TLS_GOTIE",
    17: "TLS_LE", 18: "TLS_GD", 19: "TLS_LDM", 20: "16", 21: "PC16", 22: "8", 23: "PC8", 32: "TLS_LDO_32",
    33: "TLS_IE_32", 34: "TLS_LE_32", 35: "TLS_DTPMOD32", 36: "TLS_DTPOFF32", 37: "TLS_TPOFF32",
    38: "SIZE32", 39: "TLS_GOTDESC", 40: "TLS_DESC_CALL", 41: "TLS_DESC", 42: "IRELATIVE", 43: "GOT32X",
  ]
}
