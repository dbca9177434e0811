import CLibElf

extension ElfFileParser {
  /// The notes of every `PT_NOTE` segment, in file order; at most `maxNotes`. A segment libelf cannot
  /// read is passed over, and a note that runs past its segment ends it: what notes say is a hint,
  /// and a file the loader runs may still carry a damaged one.
  func readNotes() -> [ElfFile.Note] {
    var notes: [ElfFile.Note] = []
    for segment in segments where segment.type == 4 /* PT_NOTE */ && segment.fileSize > 0 {
      let (end, overflow) = segment.fileOffset.addingReportingOverflow(segment.fileSize)
      guard !overflow, end <= fileSize, segment.fileSize <= UInt64(Int.max),
        let data = elf_getdata_rawchunk(
          elf, Int64(segment.fileOffset), Int(segment.fileSize), segment.alignment == 8 ? ELF_T_NHDR8 : ELF_T_NHDR),
        let bytes = data.pointee.d_buf
      else { continue }
      var offset = 0
      while notes.count < Self.maxNotes {
        var header = GElf_Nhdr()
        var nameOffset = 0
        var descriptionOffset = 0
        let next = gelf_getnote(data, offset, &header, &nameOffset, &descriptionOffset)
        guard next > offset else { break }
        let name = UnsafeRawBufferPointer(start: bytes + nameOffset, count: Int(header.n_namesz))
        notes.append(ElfFile.Note(owner: String(decoding: name.prefix { $0 != 0 }, as: UTF8.self), type: header.n_type))
        offset = next
      }
    }
    return notes
  }

  /// Notes read at most: what they are asked for is a hint found in the first few.
  static let maxNotes = 64
}
