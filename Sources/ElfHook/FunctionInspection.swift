import CElfHook

/// What the engine says of a function in an ELF file before anything is attached: where it is,
/// whether it is exported, and whether ``Attachment`` could patch its first instructions.
///
/// The file is read directly (`.dynsym`, then `.symtab`); the prologue goes through the same
/// decoding and refusals as an attach, with nothing placed or written. Files of the engine's own
/// architecture only.
public struct FunctionInspection: Sendable, Equatable {
  /// The symbol's name.
  public let symbol: String
  /// Its link-time address (`st_value`); a loaded image adds its load bias.
  public let address: UInt64
  /// `st_size`; 0 when unknown.
  public let size: UInt64
  /// Found in `.dynsym`: other images can reach it through their GOT slots.
  public let isExported: Bool
  /// `STB_LOCAL`: a static function.
  public let isLocal: Bool
  /// An IFUNC resolver (refused: attach to the implementation `dlsym` returns).
  public let isIndirectFunction: Bool
  /// Why an attach would be refused, or nil when it would patch the function.
  public let refusal: ElfHookError?

  /// Whether an attach would patch it.
  public var isAttachable: Bool { refusal == nil }

  /// Looks `symbol` up in the file at `path` and checks its prologue.
  ///
  /// - Throws: ``ElfHookError``: `ELFHOOK_ERR_SYMBOL_NOT_FOUND` (a stripped file has no `.symtab`),
  ///   `ELFHOOK_ERR_MALFORMED_IMAGE` (not a 64-bit ELF file of this architecture).
  ///
  /// The corresponding C function is `elfhook_inspect_function`.
  public init(symbol: String, inFile path: String) throws(ElfHookError) {
    var info = elfhook_function_info()
    try check(elfhook_inspect_function(path, symbol, &info))
    self.symbol = symbol
    address = info.address
    size = info.size
    isExported = info.in_dynsym != 0
    isLocal = info.is_local != 0
    isIndirectFunction = info.is_ifunc != 0
    let reason = withUnsafeBytes(of: &info.reason) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
    refusal = info.attachable == ELFHOOK_OK.rawValue ? nil : ElfHookError(status: info.attachable, message: reason)
  }
}
