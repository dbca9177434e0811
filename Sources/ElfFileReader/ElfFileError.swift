#if canImport(Glibc)
  import Glibc
#endif

/// Why an ``ElfFile`` could not be read.
///
/// Every case names the file, and its ``description`` is one line that says what failed, in the
/// form a command line tool prints after its own name:
/// `/tmp/x: not an ELF file (bad magic)`.
public enum ElfFileError: Error, CustomStringConvertible, Equatable, Sendable {
  /// `open` or `fstat` failed; `errno` is the C error number.
  case cannotOpen(path: String, errno: Int32)
  /// A read of the file failed; `errno` is the C error number.
  case cannotRead(path: String, errno: Int32)
  /// The path names a directory.
  case isDirectory(path: String)
  /// The path names something that is neither a regular file nor a directory (a FIFO, a socket, a device).
  case notRegularFile(path: String)
  /// The file has no bytes at all.
  case empty(path: String)
  /// The file does not start with the ELF magic `\x7fELF`.
  case notELF(path: String)
  /// The file ends before a structure its header promises; `detail` says which.
  case truncated(path: String, detail: String)
  /// The ELF class byte (`EI_CLASS`) is neither 32-bit nor 64-bit.
  case unsupportedClass(path: String, elfClass: UInt8)
  /// The byte order (`EI_DATA`) is neither little- nor big-endian.
  case unsupportedEncoding(path: String, encoding: UInt8)
  /// The machine (`e_machine`) is not one whose relocations this reader knows.
  case unsupportedMachine(path: String, machine: UInt16)
  /// A libelf call failed; `message` is libelf's own text (`elf_errmsg`).
  case libelf(path: String, call: String, message: String)
  /// A section or table is inconsistent; `detail` says which and how.
  case malformed(path: String, detail: String)

  /// The file the error is about.
  public var path: String {
    switch self {
    case .cannotOpen(let path, _), .cannotRead(let path, _), .isDirectory(let path),
      .notRegularFile(let path), .empty(let path), .notELF(let path), .truncated(let path, _),
      .unsupportedClass(let path, _), .unsupportedEncoding(let path, _),
      .unsupportedMachine(let path, _), .libelf(let path, _, _), .malformed(let path, _):
      return path
    }
  }

  /// One line: the file, then what failed.
  public var description: String {
    switch self {
    case .cannotOpen(let path, let code):
      return "\(path): cannot open: \(ElfFileError.errnoText(code))"
    case .cannotRead(let path, let code):
      return "\(path): cannot read: \(ElfFileError.errnoText(code))"
    case .isDirectory(let path):
      return "\(path): is a directory, not an ELF file"
    case .notRegularFile(let path):
      return "\(path): not a regular file"
    case .empty(let path):
      return "\(path): empty file, not an ELF file"
    case .notELF(let path):
      return "\(path): not an ELF file (bad magic)"
    case .truncated(let path, let detail):
      return "\(path): truncated ELF file (\(detail))"
    case .unsupportedClass(let path, let elfClass):
      return "\(path): unsupported ELF class \(elfClass) (expected 1 for 32-bit or 2 for 64-bit)"
    case .unsupportedEncoding(let path, let encoding):
      return "\(path): unsupported ELF data encoding \(encoding) (expected 1 or 2)"
    case .unsupportedMachine(let path, let machine):
      return "\(path): unsupported machine \(machine) (supported: x86-64, AArch64, i386)"
    case .libelf(let path, let call, let message):
      return "\(path): libelf \(call) failed: \(message)"
    case .malformed(let path, let detail):
      return "\(path): malformed ELF file: \(detail)"
    }
  }

  static func errnoText(_ code: Int32) -> String {
    guard let text = strerror(code) else { return "errno \(code)" }
    return String(cString: text)
  }
}
