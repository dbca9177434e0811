// libFuzzer entry point for ElfFile: every input is written to a scratch file and read back with
// ElfFile(path:), touching every derived property. Built and run by scripts/fuzz-elffile.
#if canImport(Glibc)
  import Glibc
#endif

private let scratchPath = "/tmp/elffile-fuzz-\(getpid()).bin"
private let scratchFD: Int32 = open(scratchPath, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
  guard scratchFD >= 0, ftruncate(scratchFD, 0) == 0 else { return 0 }
  var written = 0
  while written < size {
    let n = pwrite(scratchFD, data + written, size - written, off_t(written))
    if n <= 0 { return 0 }
    written += n
  }
  guard let file = try? ElfFile(path: scratchPath) else { return 0 }
  _ = file.importSlots.count
  _ = file.relroRange
  _ = file.isPIE
  _ = file.relro
  _ = file.loadedAddressRange
  _ = file.lowestLoadAddress()
  _ = file.sections.map(\.flagsDescription)
  _ = file.segments.map(\.flagsDescription)
  _ = file.dynamicSymbols.map { $0.version?.suffix }
  return 0
}
