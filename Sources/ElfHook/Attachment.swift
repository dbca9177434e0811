import CElfHook

/// An inline hook: a function's first instructions patched to jump to a `@convention(c)`
/// replacement, with its original typed. It reaches the calls no GOT slot reaches — a library
/// calling its own functions, a statically linked library, a static function.
///
/// ```swift
/// typealias Add = @convention(c) (Int32, Int32) -> Int32
/// let attachment = try Attachment<Add>(symbol: "inline_add", inImagesMatching: "libinline.so", to: hook)
/// attachment.original(2, 3)   // the function as it was
/// try attachment.detach()     // its first bytes restored
/// ```
///
/// Attachments to one function chain: the newest runs first, and its ``original`` calls the one
/// attached before it. Detach in any order. Like ``RebindingSet``, an attachment stays until
/// detached; dropping the last reference does not detach it (the engine keeps writing its original
/// into storage it owns, which is then never freed).
///
/// On x86_64 and aarch64.
public final class Attachment<Function>: @unchecked Sendable {
  private var handle: OpaquePointer?
  private let storage: UnsafeMutablePointer<UnsafeMutableRawPointer?>

  /// Attaches `replacement` to the function at `function`.
  ///
  /// - Parameters:
  ///   - function: the function to patch, as a `@convention(c)` value (its address).
  ///   - replacement: a `@convention(c)` function of the same C type.
  /// - Throws: ``ElfHookError`` when the prologue cannot be relocated (its status names why) or
  ///   the code page cannot be written; the function is then left unchanged.
  ///
  /// The corresponding C function is `elfhook_attach`.
  public convenience init(function: Function, to replacement: Function) throws(ElfHookError) {
    try self.init(address: Self.pointer(to: function), to: replacement)
  }

  /// Attaches `replacement` to the function at `address`.
  ///
  /// The corresponding C function is `elfhook_attach`.
  public init(address: UnsafeRawPointer, to replacement: Function) throws(ElfHookError) {
    storage = .allocate(capacity: 1)
    storage.initialize(to: nil)
    let status = elfhook_attach(
      UnsafeMutableRawPointer(mutating: address), UnsafeMutableRawPointer(mutating: Self.pointer(to: replacement)),
      storage, &handle)
    try finish(status)
  }

  /// Attaches `replacement` to the function named `symbol`: from the `.dynsym` of a loaded image,
  /// or from the `.symtab` of its file when the function is not exported (static functions of an
  /// unstripped binary).
  ///
  /// - Parameters:
  ///   - symbol: the function's name.
  ///   - pattern: an `fnmatch(3)` pattern on the image's path or file name (`"libssl.so*"`); nil
  ///     for every image. The first image, in load order, that defines the function is used.
  ///   - replacement: a `@convention(c)` function of the same C type.
  /// - Throws: ``ElfHookError``; `ELFHOOK_ERR_SYMBOL_NOT_FOUND` when no matching image defines it.
  ///
  /// The corresponding C function is `elfhook_attach_symbol`.
  public init(symbol: String, inImagesMatching pattern: String? = nil, to replacement: Function) throws(ElfHookError) {
    storage = .allocate(capacity: 1)
    storage.initialize(to: nil)
    let replacementPointer = UnsafeMutableRawPointer(mutating: Self.pointer(to: replacement))
    let status =
      if let pattern {
        elfhook_attach_symbol(pattern, symbol, replacementPointer, storage, &handle)
      } else {
        elfhook_attach_symbol(nil, symbol, replacementPointer, storage, &handle)
      }
    try finish(status)
  }

  /// What calls the function as it was before this attachment: a trampoline running its displaced
  /// instructions, or the replacement attached before this one. Stays callable after ``detach()``.
  public var original: Function {
    unsafeBitCast(originalSlot.pointee!, to: Function.self)
  }

  /// Where the engine keeps ``original`` current (it changes when an attachment beneath this one
  /// is detached): for hooks on hot paths that read it from a stable pointer.
  public var originalSlot: UnsafeMutablePointer<UnsafeMutableRawPointer?> { storage }

  /// Whether the attachment is still in place.
  public var isAttached: Bool { handle != nil }

  /// Detaches: later attachments to the function stay in their chain; the last detach restores the
  /// function's first bytes exactly. Detaching twice is harmless.
  ///
  /// The corresponding C function is `elfhook_detach`.
  public func detach() throws(ElfHookError) {
    guard let current = handle else { return }
    handle = nil
    try check(elfhook_detach(current))
  }

  deinit {
    // Still attached: the engine writes into `storage` when the chain changes, so it is kept.
    if handle == nil { storage.deallocate() }
  }

  private func finish(_ status: Int32) throws(ElfHookError) {
    if status != ELFHOOK_OK.rawValue {
      let error = ElfHookError.last(status)
      handle = nil
      throw error
    }
  }

  private static func pointer(to function: Function) -> UnsafeRawPointer {
    precondition(
      MemoryLayout<Function>.size == MemoryLayout<UnsafeRawPointer>.size,
      "Attachment needs a @convention(c) function type, not \(Function.self)")
    return unsafeBitCast(function, to: UnsafeRawPointer.self)
  }
}
