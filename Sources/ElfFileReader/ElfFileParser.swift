import CLibElf

#if canImport(Glibc)
  import Glibc
#endif

/// libelf needs `elf_version` once per process before any other call; a Swift global is initialized
/// once, thread-safely, on first use.
private let libelfVersionOK: Bool = elf_version(1 /* EV_CURRENT */) != 0 /* EV_NONE */

/// The text of libelf's most recent error on this thread.
func libelfMessage() -> String {
  guard let text = elf_errmsg(-1) else { return "unknown libelf error" }
  return String(cString: text)
}

/// Reads everything `ElfFile` holds in one pass over an open libelf handle.
struct ElfFileParser {
  let path: String
  let elf: OpaquePointer
  var fileSize: UInt64 = 0
  var header: ElfFile.Header
  var segments: [ElfFile.Segment] = []
  var notes: [ElfFile.Note] = []
  var sections: [ElfFile.Section] = []
  var dynamicSymbols: [ElfFile.Symbol] = []
  var relocations: [ElfFile.Relocation] = []
  var needed: [String] = []
  var runpath: String?
  var rpath: String?
  var soname: String?
  var flags: UInt64 = 0
  var flags1: UInt64 = 0
  /// Section index of `.dynsym`, if any.
  var dynsymIndex: Int?

  static let maxChainSteps = 1 << 16

  /// With `segmentsOnly`, stops after the ELF header and the program headers (``ElfProgramHeaders``).
  static func parse(path: String, segmentsOnly: Bool = false) throws(ElfFileError) -> ElfFileParser {
    let (fd, openErrno) = ElfFileSystem.open(path)
    guard fd >= 0 else { throw .cannotOpen(path: path, errno: openErrno) }
    defer { ElfFileSystem.close(fd) }
    let (info, statErrno) = ElfFileSystem.fstat(fd)
    guard let info else { throw .cannotOpen(path: path, errno: statErrno) }
    let mode = info.st_mode & S_IFMT
    if mode == S_IFDIR { throw .isDirectory(path: path) }
    if mode != S_IFREG { throw .notRegularFile(path: path) }
    let size = UInt64(max(0, info.st_size))
    if size == 0 { throw .empty(path: path) }

    let (bytes, readErrno) = ElfFileSystem.pread(fd, count: 64, offset: 0)
    guard let ident = bytes else { throw .cannotRead(path: path, errno: readErrno) }
    if ident.count < 4 || ident[0] != 0x7f || ident[1] != 0x45 || ident[2] != 0x4c || ident[3] != 0x46 {
      throw .notELF(path: path)
    }
    if ident.count < 16 {
      throw .truncated(path: path, detail: "ELF identification: \(ident.count) of 16 bytes")
    }
    let elfClass = ident[4]
    guard elfClass == 1 || elfClass == 2 else { throw .unsupportedClass(path: path, elfClass: elfClass) }
    guard ident[5] == 1 || ident[5] == 2 else {
      throw .unsupportedEncoding(path: path, encoding: ident[5])
    }
    let headerSize = elfClass == 1 ? 52 : 64
    if ident.count < headerSize {
      throw .truncated(path: path, detail: "ELF header: \(ident.count) of \(headerSize) bytes")
    }

    guard libelfVersionOK else { throw .libelf(path: path, call: "elf_version", message: libelfMessage()) }
    guard let elf = elf_begin(fd, ELF_C_READ_MMAP, nil) else {
      throw .libelf(path: path, call: "elf_begin", message: libelfMessage())
    }
    defer { elf_end(elf) }
    guard elf_kind(elf) == ELF_K_ELF else { throw .notELF(path: path) }

    var ehdr = GElf_Ehdr()
    guard gelf_getehdr(elf, &ehdr) != nil else {
      throw .libelf(path: path, call: "gelf_getehdr", message: libelfMessage())
    }
    let machine = ehdr.e_machine
    guard [ElfNames.machineX86_64, ElfNames.machineAArch64, ElfNames.machine386].contains(machine) else {
      throw .unsupportedMachine(path: path, machine: machine)
    }
    try checkTable(
      path: path, what: "program header table", offset: ehdr.e_phoff, count: UInt64(ehdr.e_phnum),
      entrySize: UInt64(ehdr.e_phentsize), fileSize: size)
    try checkTable(
      path: path, what: "section header table", offset: ehdr.e_shoff, count: UInt64(ehdr.e_shnum),
      entrySize: UInt64(ehdr.e_shentsize), fileSize: size)

    let header = ElfFile.Header(
      bits: elfClass == 1 ? 32 : 64, isLittleEndian: ident[5] == 1, type: ehdr.e_type,
      typeName: ElfNames.fileType(ehdr.e_type), machine: machine,
      machineName: ElfNames.machine(machine), entry: ehdr.e_entry)
    var parser = ElfFileParser(path: path, elf: elf, header: header)
    parser.fileSize = size
    try parser.readSegments()
    if segmentsOnly {
      parser.notes = parser.readNotes()  // what ElfProgramHeaders asks of a command; ElfFile has no use for them
      return parser
    }
    try parser.readSections()
    let versions = try parser.readVersions()
    try parser.readDynamicSymbols(versions: versions)
    try parser.readDynamic()
    try parser.readRelocations(versions: versions)
    if parser.sections.count <= 1 { try parser.readFromDynamicSegment() }
    return parser
  }

  /// Throws `.truncated` when a header table the ELF header promises ends past the end of the file.
  static func checkTable(
    path: String, what: String, offset: UInt64, count: UInt64, entrySize: UInt64, fileSize: UInt64
  ) throws(ElfFileError) {
    guard offset != 0, count != 0 else { return }
    let (bytes, overflow1) = count.multipliedReportingOverflow(by: entrySize)
    let (end, overflow2) = offset.addingReportingOverflow(bytes)
    if overflow1 || overflow2 || end > fileSize {
      throw .truncated(
        path: path,
        detail: "\(what) at offset \(ElfNames.hex(offset)) needs \(count) × \(entrySize) bytes, "
          + "file has \(fileSize) bytes")
    }
  }

  init(path: String, elf: OpaquePointer, header: ElfFile.Header) {
    self.path = path
    self.elf = elf
    self.header = header
  }

  // MARK: - Segments and sections

  mutating func readSegments() throws(ElfFileError) {
    var count = 0
    guard elf_getphdrnum(elf, &count) == 0 else {
      throw .libelf(path: path, call: "elf_getphdrnum", message: libelfMessage())
    }
    for index in 0..<count {
      var phdr = GElf_Phdr()
      guard gelf_getphdr(elf, Int32(clamping: index), &phdr) != nil else {
        throw .malformed(path: path, detail: "program header \(index): \(libelfMessage())")
      }
      segments.append(
        ElfFile.Segment(
          type: phdr.p_type, typeName: ElfNames.segmentType(phdr.p_type), flags: phdr.p_flags,
          virtualAddress: phdr.p_vaddr, memorySize: phdr.p_memsz, fileOffset: phdr.p_offset,
          fileSize: phdr.p_filesz, alignment: phdr.p_align))
    }
  }

  mutating func readSections() throws(ElfFileError) {
    var count = 0
    guard elf_getshdrnum(elf, &count) == 0 else {
      throw .libelf(path: path, call: "elf_getshdrnum", message: libelfMessage())
    }
    var namesIndex = 0
    let haveNames = elf_getshdrstrndx(elf, &namesIndex) == 0 && namesIndex < count
    for index in 0..<count {
      guard let scn = elf_getscn(elf, index) else {
        throw .malformed(path: path, detail: "section \(index): \(libelfMessage())")
      }
      var shdr = GElf_Shdr()
      guard gelf_getshdr(scn, &shdr) != nil else {
        throw .malformed(path: path, detail: "section header \(index): \(libelfMessage())")
      }
      let name = haveNames && index != 0 ? string(section: namesIndex, offset: UInt64(shdr.sh_name)) ?? "" : ""
      sections.append(
        ElfFile.Section(
          index: index, name: name, type: shdr.sh_type, typeName: ElfNames.sectionType(shdr.sh_type),
          address: shdr.sh_addr, fileOffset: shdr.sh_offset, size: shdr.sh_size, flags: shdr.sh_flags,
          link: shdr.sh_link, info: shdr.sh_info, entrySize: shdr.sh_entsize))
      if shdr.sh_type == 11 && dynsymIndex == nil { dynsymIndex = index }
    }
  }

  /// The string at `offset` in string-table section `section`, or nil when either is out of bounds
  /// or the section is not a string table. The corresponding libelf function is `elf_strptr`.
  func string(section: Int, offset: UInt64) -> String? {
    Self.string(elf: elf, section: section, offset: offset)
  }

  static func string(elf: OpaquePointer, section: Int, offset: UInt64) -> String? {
    // elf_strptr itself checks the section index, its type and the offset against its size.
    guard section > 0, offset <= UInt64(Int.max) else { return nil }
    guard let text = elf_strptr(elf, section, Int(offset)) else { return nil }
    return String(cString: text)
  }

  /// The data of section `index`, or a `.malformed` error naming the section.
  /// The corresponding libelf function is `elf_getdata`.
  func data(section index: Int) throws(ElfFileError) -> UnsafeMutablePointer<Elf_Data>? {
    guard index < sections.count, sections[index].type != 8 /* NOBITS */ else { return nil }
    guard let scn = elf_getscn(elf, index) else {
      throw .malformed(path: path, detail: "section \(describe(section: index)): \(libelfMessage())")
    }
    guard let data = elf_getdata(scn, nil) else {
      if sections[index].size == 0 { return nil }
      throw .malformed(
        path: path, detail: "section \(describe(section: index)) cannot be read: \(libelfMessage())")
    }
    return data
  }

  func describe(section index: Int) -> String {
    guard index < sections.count, !sections[index].name.isEmpty else { return "[\(index)]" }
    return "[\(index)] \(sections[index].name)"
  }

  func entryCount(_ data: UnsafeMutablePointer<Elf_Data>, type: Elf_Type) -> Int {
    let size = gelf_fsize(elf, type, 1, 1 /* EV_CURRENT */)
    guard size > 0 else { return 0 }
    return data.pointee.d_size / size
  }
}
