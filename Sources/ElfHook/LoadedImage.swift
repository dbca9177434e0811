import CElfHook

/// An ELF image loaded in this process: the executable, a shared library, the vDSO.
///
/// The engine's view: what `dl_iterate_phdr` reports, with the import slots parsed from the image's
/// dynamic section in memory.
public struct LoadedImage: Hashable, Sendable {
  /// Absolute path; the main program's is resolved from `/proc/self/exe`.
  public let path: String
  /// The load bias (`dl_phdr_info.dlpi_addr`): add it to a file's virtual address to get the address.
  public let loadBias: UInt
  /// Address of the ELF header in memory.
  public let header: UInt
  /// The executable the process started with.
  public let isMainProgram: Bool
  /// The image that contains the rebinding engine itself; it is never patched unless it is the
  /// main program.
  public let containsEngine: Bool

  init(path: String, loadBias: UInt, header: UInt, isMainProgram: Bool, containsEngine: Bool) {
    self.path = path
    self.loadBias = loadBias
    self.header = header
    self.isMainProgram = isMainProgram
    self.containsEngine = containsEngine
  }

  init(_ view: UnsafePointer<elfhook_image>) {
    path = view.pointee.path.map { String(cString: $0) } ?? ""
    loadBias = view.pointee.load_bias
    header = UInt(bitPattern: view.pointee.header)
    isMainProgram = view.pointee.is_main_program != 0
    containsEngine = view.pointee.is_engine != 0
  }

  /// Every loaded image, in link-map order (the main program first).
  ///
  /// The corresponding C function is `elfhook_enumerate_images`.
  public static func all() throws(ElfHookError) -> [LoadedImage] {
    final class Collector { var images: [LoadedImage] = [] }
    let collector = Collector()
    let status = withExtendedLifetime(collector) {
      elfhook_enumerate_images({ image, context in
        let collector = Unmanaged<Collector>.fromOpaque(context!).takeUnretainedValue()
        collector.images.append(LoadedImage(image!))
        return 0
      }, Unmanaged.passUnretained(collector).toOpaque())
    }
    try check(status)
    return collector.images
  }

  /// The loaded image whose file name or path matches `name` exactly ("libssl.so.3" or a full path).
  public static func named(_ name: String) throws(ElfHookError) -> LoadedImage? {
    try all().first { $0.path == name || $0.fileName == name }
  }

  /// The last path component.
  public var fileName: String {
    guard let slash = path.lastIndex(of: "/") else { return path }
    return String(path[path.index(after: slash)...])
  }

  /// The image's import slots as they are now: every `JUMP_SLOT`, `GLOB_DAT` and function-pointer
  /// `ABS64` relocation, with the value each slot holds.
  ///
  /// The corresponding C function is `elfhook_enumerate_slots`.
  public func importSlots() throws(ElfHookError) -> [ImportSlot] {
    final class Collector { var slots: [ImportSlot] = [] }
    let collector = Collector()
    let status = withExtendedLifetime(collector) {
      elfhook_enumerate_slots(loadBias, { _, slot, context in
        let collector = Unmanaged<Collector>.fromOpaque(context!).takeUnretainedValue()
        collector.slots.append(ImportSlot(slot!))
        return 0
      }, Unmanaged.passUnretained(collector).toOpaque())
    }
    try check(status)
    return collector.slots
  }
}

/// One GOT slot of a loaded image: where calls (or loads of a function's address) to a symbol go.
public struct ImportSlot: Hashable, Sendable {
  /// The relocation that fills the slot.
  public enum Kind: Sendable, Hashable {
    /// `R_X86_64_JUMP_SLOT` / `R_AARCH64_JUMP_SLOT`: calls through the PLT (lazy or bound now).
    case jumpSlot
    /// `R_X86_64_GLOB_DAT` / `R_AARCH64_GLOB_DAT`: GOT loads, `-fno-plt` calls, address-taken functions.
    case globalData
    /// `R_X86_64_64` / `R_AARCH64_ABS64` with addend 0: a function pointer stored in data.
    case dataPointer
  }

  /// The symbol's name.
  public let symbol: String
  /// Its version (`GLIBC_2.2.5`), or nil when unversioned.
  public let version: String?
  public let kind: Kind
  /// The architecture's relocation number (`R_X86_64_JUMP_SLOT` is 7).
  public let relocationType: UInt32
  /// The slot's address.
  public let address: UInt
  /// What the slot points at now.
  public let value: UInt
  /// Whether the slot lies in `PT_GNU_RELRO`, read-only after start-up.
  public let isInRelro: Bool

  init(_ slot: UnsafePointer<elfhook_slot>) {
    symbol = String(cString: slot.pointee.symbol)
    version = slot.pointee.version.map { String(cString: $0) }
    switch slot.pointee.kind {
    case ELFHOOK_SLOT_JUMP_SLOT: kind = .jumpSlot
    case ELFHOOK_SLOT_GLOB_DAT: kind = .globalData
    default: kind = .dataPointer
    }
    relocationType = slot.pointee.relocation_type
    address = UInt(bitPattern: slot.pointee.address)
    value = UInt(bitPattern: slot.pointee.value)
    isInRelro = slot.pointee.in_relro != 0
  }
}
