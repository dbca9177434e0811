import ElfFileReader
import ElfHook
import Foundation

/// One line of `/proc/PID/maps`: `start-end perms offset dev inode pathname`.
struct MemoryMapping {
  var start: UInt64
  var end: UInt64
  var permissions: String
  var offset: UInt64
  var pathname: String

  /// Parses one line; nil for a line that does not have the five leading fields.
  init?(line: Substring) {
    let fields = line.split(separator: " ", maxSplits: 5, omittingEmptySubsequences: true)
    guard fields.count >= 5 else { return nil }
    let range = fields[0].split(separator: "-")
    guard range.count == 2, let start = UInt64(range[0], radix: 16), let end = UInt64(range[1], radix: 16),
      let offset = UInt64(fields[2], radix: 16)
    else { return nil }
    self.start = start
    self.end = end
    self.permissions = String(fields[1])
    self.offset = offset
    self.pathname = fields.count == 6 ? fields[5].trimmingCharacters(in: .whitespaces) : ""
  }

  func contains(_ address: UInt64) -> Bool { address >= start && address < end }
}

/// The mapped ELF images of a running process and a reader of its memory.
struct ProcessImages {
  let pid: Int32
  let mappings: [MemoryMapping]
  /// An open `/proc/PID/mem`, or nil when it cannot be opened (then `memoryError` says why).
  let memory: FileHandle?
  let memoryError: String?

  enum Failure: Error, CustomStringConvertible {
    case cannotReadMaps(pid: Int32, reason: String)
    var description: String {
      switch self {
      case .cannotReadMaps(let pid, let reason): return "process \(pid): cannot read /proc/\(pid)/maps: \(reason)"
      }
    }
  }

  init(pid: Int32) throws(Failure) {
    self.pid = pid
    let text: String
    do {
      text = try String(contentsOfFile: "/proc/\(pid)/maps", encoding: .utf8)
    } catch {
      let reason = FileManager.default.fileExists(atPath: "/proc/\(pid)") ? "permission denied" : "no such process"
      throw .cannotReadMaps(pid: pid, reason: reason)
    }
    mappings = text.split(separator: "\n").compactMap(MemoryMapping.init(line:))
    let fd = open("/proc/\(pid)/mem", O_RDONLY | O_CLOEXEC)
    if fd >= 0 {
      memory = FileHandle(fileDescriptor: fd, closeOnDealloc: true)
      memoryError = nil
    } else {
      memory = nil
      memoryError = "cannot open /proc/\(pid)/mem: \(String(cString: strerror(errno))); slot values are not shown"
    }
  }

  /// Each file-backed mapping with file offset 0, once per path, in address order: the first
  /// mapping of every ELF image the process has mapped (and of other files, which fail to parse).
  var imageMappings: [MemoryMapping] {
    var seen = Set<String>()
    return mappings.filter { mapping in
      guard mapping.offset == 0, mapping.pathname.hasPrefix("/"), !seen.contains(mapping.pathname) else {
        return false
      }
      seen.insert(mapping.pathname)
      return true
    }
  }

  /// The pathname (or `[heap]`, `[vdso]`, …) of the mapping that contains `address`.
  func owner(of address: UInt64) -> String? {
    guard let mapping = mappings.first(where: { $0.contains(address) }) else { return nil }
    return mapping.pathname.isEmpty ? "[anonymous]" : mapping.pathname
  }

  /// Reads a pointer-sized word at `address`; nil when not permitted or not mapped.
  func readWord(at address: UInt64, bytes: Int) -> UInt64? {
    guard let memory, address <= UInt64(Int64.max) else { return nil }
    var word: UInt64 = 0
    let count = withUnsafeMutableBytes(of: &word) { buffer in
      pread(memory.fileDescriptor, buffer.baseAddress, bytes, off_t(Int64(address)))
    }
    guard count == bytes else { return nil }
    return bytes == 4 ? UInt64(UInt32(truncatingIfNeeded: word)) : word
  }
}
