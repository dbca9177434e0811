/// Which images a rebinding patches.
///
/// Patterns are `fnmatch(3)` patterns matched against an image's full path and its file name
/// (`"libssl.so*"`, `"/usr/lib/x86_64-linux-gnu/*"`). The engine's own shared object, the dynamic
/// linker and the vDSO are never patched.
public struct ImageFilter: Sendable {
  /// Patch only images matching one of these; nil means every image.
  public var onlyImages: [String]?
  /// Never patch images matching one of these.
  public var exceptImages: [String]
  /// Asked last for every image that passed the patterns; return true to patch it. It runs while
  /// the engine holds its lock: it must not rebind or call `dlopen`.
  public var predicate: (@Sendable (LoadedImage) -> Bool)?
  /// Whether images loaded later (by `dlopen`, with their dependencies) are patched too.
  public var includesImagesLoadedLater: Bool

  public init(
    onlyImages: [String]? = nil, exceptImages: [String] = [],
    predicate: (@Sendable (LoadedImage) -> Bool)? = nil, includesImagesLoadedLater: Bool = true
  ) {
    self.onlyImages = onlyImages
    self.exceptImages = exceptImages
    self.predicate = predicate
    self.includesImagesLoadedLater = includesImagesLoadedLater
  }

  /// Every image, now and later: what fishhook's `rebind_symbols` does.
  public static let allImages = ImageFilter()
}
