/// An ELF file's header and program headers alone, checked as ``ElfFile`` checks them, with no
/// section, symbol or relocation read: what decides how the file runs (its type, whether it names
/// a dynamic linker). `elfhook run` asks this of every command it starts, where reading the whole
/// file was 1.5 M instructions of its own start.
public struct ElfProgramHeaders: Sendable {
  public let header: ElfFile.Header
  public let segments: [ElfFile.Segment]

  /// The file names a dynamic linker (`PT_INTERP`).
  public var hasInterpreter: Bool { segments.contains { $0.type == 3 } }

  /// - Throws: ``ElfFileError``, as ``ElfFile/init(path:)`` for the header and program headers.
  public init(path: String) throws(ElfFileError) {
    let parsed = try ElfFileParser.parse(path: path, segmentsOnly: true)
    header = parsed.header
    segments = parsed.segments
  }
}
