@testable import ElfFileReader
@testable import ElfHook
import Glibc
import Testing

typealias GetppidFunction = @convention(c) () -> pid_t

nonisolated(unsafe) private var first: Rebinding<GetppidFunction>?
nonisolated(unsafe) private var second: Rebinding<GetppidFunction>?
private let addThousand: GetppidFunction = { first!.original!() + 1000 }
private let addMillion: GetppidFunction = { second!.original!() + 1_000_000 }

/// The Swift API, in this very process (the engine is linked into the test binary, so the main
/// program's own GOT is patched: the "linked into a Swift server" mode).
@Suite("ElfHook Swift API", .serialized)
struct RebindingTests {
  @Test("loaded images: the main program first, libc among them, each path absolute")
  func images() throws {
    let images = try LoadedImage.all()
    #expect(images.first?.isMainProgram == true)
    #expect(images.first?.containsEngine == true, "the engine is linked into the test binary")
    #expect(images.contains { $0.fileName == "libc.so.6" })
    #expect(images.filter(\.isMainProgram).count == 1)
    for image in images where !image.path.isEmpty && !image.fileName.hasPrefix("linux-vdso") {
      #expect(image.path.hasPrefix("/"), "\(image.path)")
    }
    #expect(try LoadedImage.named("libc.so.6") != nil)
  }

  @Test("a typed rebinding: hook, original, chain, undo in both orders")
  func chain() throws {
    let real = getppid()
    first = try Rebinding("getppid", to: addThousand)
    #expect(getppid() == real + 1000)
    #expect(first!.original!() == real)
    second = try Rebinding("getppid", to: addMillion)
    #expect(getppid() == real + 1_001_000)
    try first!.remove()
    #expect(getppid() == real + 1_000_000, "removing the lower hook keeps the upper one, now on the real function")
    try second!.remove()
    #expect(getppid() == real)

    first = try Rebinding("getppid", to: addThousand)
    second = try Rebinding("getppid", to: addMillion)
    try second!.remove()
    #expect(getppid() == real + 1000)
    try first!.remove()
    #expect(getppid() == real)
    try first!.remove()  // removing twice is harmless
  }

  @Test("filters: an image pattern that matches nothing patches nothing")
  func filters() throws {
    let real = getppid()
    first = try Rebinding("getppid", to: addThousand, in: ImageFilter(onlyImages: ["libnothing-such.so*"]))
    #expect(getppid() == real)
    try first!.remove()
    let mainPath = try LoadedImage.all()[0].path
    first = try Rebinding("getppid", to: addThousand, in: ImageFilter(predicate: { $0.path == mainPath }))
    #expect(getppid() == real + 1000)
    try first!.remove()
    #expect(getppid() == real)
  }

  @Test("one image: the main program only")
  func singleImage() throws {
    let real = getppid()
    let main = try LoadedImage.all()[0]
    first = try Rebinding("getppid", to: addThousand, inImage: main)
    #expect(getppid() == real + 1000)
    try first!.remove()
    #expect(getppid() == real)
  }

  @Test("errors say what failed")
  func errors() throws {
    let bogus = try LoadedImage.all()[0]
    let elsewhere = LoadedImage(
      path: bogus.path, loadBias: bogus.loadBias &+ 4096, header: bogus.header, isMainProgram: true, containsEngine: true)
    #expect(throws: ElfHookError.self) { try Rebinding("getppid", to: addThousand, inImage: elsewhere) }
    do {
      _ = try Rebinding("getppid", to: addThousand, inImage: elsewhere)
    } catch {
      #expect(error.statusName == "ELFHOOK_ERR_IMAGE_NOT_FOUND")
      #expect(error.message.contains("load bias"))
    }
  }

  /// What the engine parsed from memory matches what libelf reads from the files.
  @Test("import slots in memory agree with ElfFile on disk, for every loaded image")
  func crossCheck() throws {
    var compared = 0
    for image in try LoadedImage.all() where image.path.hasPrefix("/") {
      guard let file = try? ElfFile(path: image.path) else { continue }
      let inMemory = Set(
        try image.importSlots().filter { $0.kind != .dataPointer }.map { "\($0.address - image.loadBias) \($0.symbol)" })
      let onDisk = Set(
        file.importSlots.filter { $0.kind != .absolute && !$0.symbol.isEmpty }.map {
          "\(UInt($0.offset)) \($0.symbol)"
        })
      #expect(inMemory == onDisk, "\(image.path): memory-only \(inMemory.subtracting(onDisk).prefix(5)), disk-only \(onDisk.subtracting(inMemory).prefix(5))")
      compared += 1
    }
    #expect(compared >= 5)
  }
}

