/// One symbol rebound to a `@convention(c)` function, with its original typed.
///
/// ```swift
/// typealias Getpid = @convention(c) () -> pid_t
/// let hook: Getpid = { 42 }
/// let rebinding = try Rebinding("getpid", to: hook)
/// rebinding.original()   // the real getpid
/// try rebinding.remove()
/// ```
///
/// Like ``RebindingSet``, it stays installed until removed.
public final class Rebinding<Function>: @unchecked Sendable {
  /// The underlying one-element set.
  public let set: RebindingSet

  /// Rebinds `symbol` to `replacement` in the images `filter` selects.
  ///
  /// - Parameters:
  ///   - symbol: the symbol's name, without version (`"connect"`).
  ///   - replacement: a `@convention(c)` function of the symbol's C type.
  ///   - filter: which images; by default all of them, now and later.
  /// - Throws: ``ElfHookError``.
  ///
  /// The corresponding C function is `elfhook_rebind`.
  public init(_ symbol: String, to replacement: Function, in filter: ImageFilter = .allImages) throws(ElfHookError) {
    set = try RebindingSet([(symbol, Self.pointer(to: replacement))], in: filter)
  }

  /// Rebinds `symbol` in one loaded image only.
  ///
  /// The corresponding C function is `elfhook_rebind_image`.
  public init(_ symbol: String, to replacement: Function, inImage image: LoadedImage) throws(ElfHookError) {
    set = try RebindingSet([(symbol, Self.pointer(to: replacement))], inImage: image)
  }

  /// The function calls reached before this rebinding: the real implementation or an earlier
  /// rebinding. nil when no slot for the symbol was found (the symbol is imported nowhere yet).
  public var original: Function? {
    guard set.isInstalled, let raw = set.originalSlot(0).pointee else { return nil }
    return unsafeBitCast(raw, to: Function.self)
  }

  /// Undoes the rebinding, keeping later rebindings of the symbol in their chain.
  public func remove() throws(ElfHookError) { try set.remove() }

  private static func pointer(to function: Function) -> UnsafeRawPointer {
    precondition(
      MemoryLayout<Function>.size == MemoryLayout<UnsafeRawPointer>.size,
      "Rebinding needs a @convention(c) function type, not \(Function.self)")
    return unsafeBitCast(function, to: UnsafeRawPointer.self)
  }
}
