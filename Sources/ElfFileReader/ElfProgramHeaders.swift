/// An ELF file's header and program headers alone, checked as ``ElfFile`` checks them, with no
/// section, symbol or relocation read: what decides how the file runs (its type, whether it names
/// a dynamic linker). `elfhook run` asks this of every command it starts, where reading the whole
/// file was 1.5 M instructions of its own start.
public struct ElfProgramHeaders: Sendable {
  public let header: ElfFile.Header
  public let segments: [ElfFile.Segment]
  /// The notes of its `PT_NOTE` segments.
  public let notes: [ElfFile.Note]

  /// The file names a dynamic linker (`PT_INTERP`).
  public var hasInterpreter: Bool { segments.contains { $0.type == 3 } }

  /// Go's linker made the file (it carries a `"Go"` note: Go's build ID). Such a program makes its
  /// system calls itself, past the C library.
  public var isGoProgram: Bool { notes.contains { $0.owner == "Go" } }

  /// - Throws: ``ElfFileError``, as ``ElfFile/init(path:)`` for the header and program headers.
  public init(path: String) throws(ElfFileError) {
    let parsed = try ElfFileParser.parse(path: path, segmentsOnly: true)
    header = parsed.header
    segments = parsed.segments
    notes = parsed.notes
  }
}
