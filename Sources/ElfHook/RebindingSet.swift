import CElfHook
import Glibc

/// Several symbols rebound in one pass over the images, removable as one.
///
/// Hooks on hot paths read their originals through ``originalSlot(_:)``: a stable pointer the
/// engine keeps current (it changes when a rebinding beneath this one is removed).
///
/// A set stays installed until ``remove()`` is called; dropping the last reference does not
/// remove it (the engine keeps writing to its storage), so a set that is never removed is never
/// freed — the right lifetime for a process-wide hook.
public final class RebindingSet: @unchecked Sendable {
  /// The symbols, in the order given.
  public let symbols: [String]
  private let names: [UnsafeMutablePointer<CChar>]
  private let originals: UnsafeMutablePointer<UnsafeMutableRawPointer?>
  private let ownsOriginals: Bool
  private let filterBox: FilterBox?
  private var handle: OpaquePointer?

  /// Rebinds each `(symbol, replacement)` in the images `filter` selects.
  ///
  /// - Parameters:
  ///   - rebindings: symbol names and the `@convention(c)` functions that replace them.
  ///   - filter: which images to patch; by default every image, now and later.
  ///   - originalStorage: where the engine keeps the originals, one pointer per rebinding in
  ///     order (for hooks that read them from a C global); by default storage the set owns.
  /// - Throws: ``ElfHookError`` when the engine refused the request or a slot could not be written.
  ///
  /// The corresponding C function is `elfhook_rebind`.
  public init(
    _ rebindings: [(symbol: String, replacement: UnsafeRawPointer)], in filter: ImageFilter = .allImages,
    originalStorage: UnsafeMutablePointer<UnsafeMutableRawPointer?>? = nil
  ) throws(ElfHookError) {
    symbols = rebindings.map(\.symbol)
    names = rebindings.map { strdup($0.symbol)! }
    ownsOriginals = originalStorage == nil
    originals = originalStorage ?? .allocate(capacity: max(rebindings.count, 1))
    if ownsOriginals { originals.initialize(repeating: nil, count: max(rebindings.count, 1)) }
    filterBox = filter.predicate.map(FilterBox.init)
    var entries = rebindings.indices.map { index in
      rebinding(
        name: names[index], replacement: UnsafeMutableRawPointer(mutating: rebindings[index].replacement),
        replaced: originals + index)
    }
    let status = Self.install(&entries, filter: filter, box: filterBox, handle: &handle)
    if status != ELFHOOK_OK.rawValue {
      let error = ElfHookError.last(status)
      if handle != nil { elfhook_unbind(handle) }
      handle = nil
      release()
      throw error
    }
  }

  /// Rebinds in one loaded image only (fishhook's `rebind_symbols_image`).
  ///
  /// The corresponding C function is `elfhook_rebind_image`.
  public init(
    _ rebindings: [(symbol: String, replacement: UnsafeRawPointer)], inImage image: LoadedImage
  ) throws(ElfHookError) {
    symbols = rebindings.map(\.symbol)
    names = rebindings.map { strdup($0.symbol)! }
    ownsOriginals = true
    originals = .allocate(capacity: max(rebindings.count, 1))
    originals.initialize(repeating: nil, count: max(rebindings.count, 1))
    filterBox = nil
    let entries = rebindings.indices.map { index in
      rebinding(
        name: names[index], replacement: UnsafeMutableRawPointer(mutating: rebindings[index].replacement),
        replaced: originals + index)
    }
    let status = elfhook_rebind_image(
      UnsafeRawPointer(bitPattern: image.header), Int(bitPattern: image.loadBias), entries, entries.count, &handle)
    if status != ELFHOOK_OK.rawValue {
      let error = ElfHookError.last(status)
      if handle != nil { elfhook_unbind(handle) }
      handle = nil
      release()
      throw error
    }
  }

  /// Where the engine keeps the original of `symbols[index]`: the function the slots held before,
  /// never a lazy-binding stub. nil until a slot for the symbol was found.
  public func originalSlot(_ index: Int) -> UnsafeMutablePointer<UnsafeMutableRawPointer?> {
    precondition(symbols.indices.contains(index), "no rebinding at index \(index)")
    return originals + index
  }

  /// Whether the set is still installed.
  public var isInstalled: Bool { handle != nil }

  /// Undoes the set: its slots get back what they held, and rebindings made after it on the same
  /// symbols now call through to this set's originals.
  ///
  /// The corresponding C function is `elfhook_unbind`.
  public func remove() throws(ElfHookError) {
    guard let current = handle else { return }
    handle = nil
    let status = elfhook_unbind(current)
    release()
    try check(status)
  }

  private func release() {
    names.forEach { free($0) }
    if ownsOriginals { originals.deallocate() }
  }

  private static func install(
    _ entries: inout [rebinding], filter: ImageFilter, box: FilterBox?, handle: inout OpaquePointer?
  ) -> Int32 {
    let only = filter.onlyImages.map(CStringList.init)
    let except = filter.exceptImages.isEmpty ? nil : CStringList(filter.exceptImages)
    defer {
      only?.free()
      except?.free()
    }
    var options = elfhook_options()
    options.only_images = only.map { UnsafePointer($0.pointers) }
    options.except_images = except.map { UnsafePointer($0.pointers) }
    options.flags = filter.includesImagesLoadedLater ? 0 : UInt32(ELFHOOK_CURRENT_IMAGES_ONLY)
    if let box {
      options.filter = { image, context in
        let box = Unmanaged<FilterBox>.fromOpaque(context!).takeUnretainedValue()
        return box.predicate(LoadedImage(image!)) ? 1 : 0
      }
      options.filter_context = Unmanaged.passUnretained(box).toOpaque()
    }
    return elfhook_rebind(entries, entries.count, &options, &handle)
  }
}

/// The Swift predicate of an ``ImageFilter``, kept alive as long as its rebinding.
private final class FilterBox {
  let predicate: @Sendable (LoadedImage) -> Bool
  init(_ predicate: @escaping @Sendable (LoadedImage) -> Bool) { self.predicate = predicate }
}

/// A NULL-terminated array of C strings for the engine's pattern lists (the engine copies them).
private struct CStringList {
  let pointers: UnsafeMutablePointer<UnsafePointer<CChar>?>
  let count: Int

  init(_ strings: [String]) {
    count = strings.count
    pointers = .allocate(capacity: count + 1)
    for (index, string) in strings.enumerated() { pointers[index] = UnsafePointer(strdup(string)) }
    pointers[count] = nil
  }

  func free() {
    for index in 0..<count { Glibc.free(UnsafeMutableRawPointer(mutating: pointers[index])) }
    pointers.deallocate()
  }
}
