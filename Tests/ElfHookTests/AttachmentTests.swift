import Foundation
import Glibc
import Testing

@testable import ElfHook

typealias AddFunction = @convention(c) (Int32, Int32) -> Int32
/// Swift Testing has an `Attachment` of its own.
typealias InlineAttachment = ElfHook.Attachment

nonisolated(unsafe) private var lower: InlineAttachment<AddFunction>?
nonisolated(unsafe) private var upper: InlineAttachment<AddFunction>?
private let plusThousand: AddFunction = { lower!.original($0, $1) + 1000 }
private let plusMillion: AddFunction = { upper!.original($0, $1) + 1_000_000 }

/// The Swift API over elfhook_attach, in this process: libinline.so is built from
/// Tests/Fixtures/inline_target.c and dlopen'ed; its own call to inline_add is direct.
@Suite("Inline hooks: the Swift API", .serialized)
struct AttachmentTests {
  struct Library {
    let add: AddFunction
    let addViaLibrary: AddFunction
  }

  static let library: Result<Library, Error> = Result {
    let directory = try ElfTestSupport.temporaryDirectory()
    let path = directory.appendingPathComponent("libinline_swift.so").path
    try EngineFixtures.cc([
      "-shared", "-fPIC", "-O2", "-Wl,-Bsymbolic-functions",
      EngineFixtures.sources.appendingPathComponent("inline_target.c").path, "-o", path,
    ])
    guard let handle = dlopen(path, RTLD_NOW) else {
      throw ElfTestSupport.FixtureError(message: "dlopen(\(path)): \(String(cString: dlerror()))")
    }
    let symbol = { (name: String) in unsafeBitCast(dlsym(handle, name)!, to: AddFunction.self) }
    return Library(add: symbol("inline_add"), addViaLibrary: symbol("inline_add_via_library"))
  }

  private static func firstBytes(_ function: AddFunction) -> [UInt8] {
    let pointer = unsafeBitCast(function, to: UnsafeRawPointer.self)
    return (0..<16).map { pointer.load(fromByteOffset: $0, as: UInt8.self) }
  }

  @Test("by symbol: the library's own direct call is hooked; chain; detach in both orders restores the bytes")
  func bySymbol() throws {
    let library = try Self.library.get()
    let before = Self.firstBytes(library.add)
    #expect(library.addViaLibrary(2, 3) == 5)
    lower = try InlineAttachment(symbol: "inline_add", inImagesMatching: "libinline_swift.so", to: plusThousand)
    #expect(library.addViaLibrary(2, 3) == 1005)
    #expect(lower!.original(2, 3) == 5)
    upper = try InlineAttachment(symbol: "inline_add", inImagesMatching: "*/libinline_swift.so", to: plusMillion)
    #expect(library.addViaLibrary(2, 3) == 1_001_005)
    try lower!.detach()
    #expect(library.addViaLibrary(2, 3) == 1_000_005, "the upper hook now calls the function itself")
    try upper!.detach()
    #expect(library.addViaLibrary(2, 3) == 5)
    #expect(Self.firstBytes(library.add) == before)

    lower = try InlineAttachment(function: library.add, to: plusThousand)
    upper = try InlineAttachment(function: library.add, to: plusMillion)
    try upper!.detach()
    #expect(library.addViaLibrary(2, 3) == 1005)
    try lower!.detach()
    try lower!.detach()  // harmless
    #expect(library.addViaLibrary(2, 3) == 5)
    #expect(Self.firstBytes(library.add) == before)
    #expect(!lower!.isAttached)
  }

  @Test("errors name the symbol and the status")
  func errors() throws {
    _ = try Self.library.get()
    do {
      _ = try InlineAttachment<AddFunction>(symbol: "no_such_function_here", to: plusThousand)
      Issue.record("attached to a function that does not exist")
    } catch {
      #expect(error.statusName == "ELFHOOK_ERR_SYMBOL_NOT_FOUND")
      #expect(error.message.contains("no_such_function_here"))
    }
    do {
      _ = try InlineAttachment<AddFunction>(symbol: "inline_add", inImagesMatching: "libnothing*.so", to: plusThousand)
      Issue.record("a pattern that matches no image found the function")
    } catch {
      #expect(error.statusName == "ELFHOOK_ERR_SYMBOL_NOT_FOUND")
    }
  }
}
