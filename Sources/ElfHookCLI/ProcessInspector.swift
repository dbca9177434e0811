import ElfFileReader
import ElfHook
import Foundation

/// Builds the `inspect --pid` report: every ELF image in `/proc/PID/maps`, its load bias, and each
/// import slot's run-time address, current value and the image the value points into.
struct ProcessInspector {
  let pid: Int32
  let includeDataPointers: Bool

  func report() throws(ProcessImages.Failure) -> InspectReport {
    let process = try ProcessImages(pid: pid)
    var report = InspectReport(pid: pid)
    if let memoryError = process.memoryError { report.notes.append(memoryError) }
    let pageSize = UInt64(max(1, sysconf(Int32(_SC_PAGESIZE))))

    // Parse every image first, so a slot value can be checked against the image it points into.
    var files: [String: ElfFile] = [:]
    for mapping in process.imageMappings {
      var image = ImageReport(path: mapping.pathname)
      do {
        let file = try openImage(mapping)
        files[mapping.pathname] = file
        image.file = file
        image.loadBias = mapping.start &- file.lowestLoadAddress(pageSize: pageSize)
      } catch {
        // Files mapped whole that are not ELF (locale archives, caches, fonts) are not images.
        if case .notELF = error { continue }
        if case .empty = error { continue }
        image.error = error.description
      }
      report.images.append(image)
    }

    // Where each image lies in memory, .bss included (the tail of .bss is an anonymous mapping).
    var ranges: [(range: Range<UInt64>, path: String)] = []
    for image in report.images {
      guard let file = image.file, let bias = image.loadBias, let range = file.loadedAddressRange else { continue }
      let (low, high) = (bias &+ range.lowerBound, bias &+ range.upperBound)
      if low <= high { ranges.append((low..<high, image.path)) }
    }
    func owner(of value: UInt64) -> String? {
      ranges.first(where: { $0.range.contains(value) })?.path ?? process.owner(of: value)
    }

    var defined: [String: Set<String>] = [:]
    var unreadable = 0
    for index in report.images.indices {
      guard let file = report.images[index].file, let bias = report.images[index].loadBias else { continue }
      let ownPath = report.images[index].path
      let wordSize = file.header.bits / 8
      report.images[index].slots = file.importSlots.filter { includeDataPointers || $0.kind != .absolute }.map {
        slot in
        var entry = SlotReport(slot: slot)
        let address = bias &+ slot.offset
        entry.address = address
        guard let value = process.readWord(at: address, bytes: wordSize) else {
          if process.memory != nil { unreadable += 1 }
          return entry
        }
        entry.value = value
        entry.pointsInto = value == 0 ? nil : owner(of: value)
        guard value != 0, !slot.symbol.isEmpty, let target = entry.pointsInto else { return entry }
        if target == ownPath {
          entry.hooked = false  // an unresolved lazy slot, or a symbol the image defines itself
        } else if let targetFile = files[target] {
          if defined[target] == nil {
            defined[target] = Set(targetFile.dynamicSymbols.filter { !$0.isUndefined }.map(\.name))
          }
          entry.hooked = !(defined[target]?.contains(slot.symbol) ?? false)
        } else {
          entry.hooked = true  // anonymous memory or a file that is not an ELF image
        }
        return entry
      }
    }
    if unreadable > 0 {
      report.notes.append("\(unreadable) slot values could not be read from /proc/\(pid)/mem")
    }
    return report
  }

  /// Reads the file behind a mapping; a deleted file is read through `/proc/PID/map_files`.
  func openImage(_ mapping: MemoryMapping) throws(ElfFileError) -> ElfFile {
    do {
      return try ElfFile(path: mapping.pathname)
    } catch {
      guard mapping.pathname.hasSuffix(" (deleted)") else { throw error }
      let alias = "/proc/\(pid)/map_files/\(String(mapping.start, radix: 16))-\(String(mapping.end, radix: 16))"
      return try ElfFile(path: alias)
    }
  }
}
