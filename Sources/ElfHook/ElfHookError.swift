import CElfHook

/// A failure of the rebinding engine: the status it returned and the text saying what failed.
///
/// The text names the symbol, image, ELF tag or errno involved, e.g.
/// `mprotect(0x7f…, 4096, +W) for 'connect' in /usr/lib/x86_64-linux-gnu/libcurl.so.4: Permission denied`.
public struct ElfHookError: Error, Equatable, CustomStringConvertible {
  /// The engine's status: one of the `ELFHOOK_ERR_*` values of `elfhook.h`.
  public let status: Int32
  /// What failed, from `elfhook_last_error()` on the failing thread.
  public let message: String

  /// The status's name, such as `ELFHOOK_ERR_IMAGE_NOT_FOUND`.
  public var statusName: String { String(cString: elfhook_status_name(status)) }

  public var description: String { message.isEmpty ? statusName : "\(statusName): \(message)" }

  /// Reads the calling thread's error text for `status`. Call right after the failing C call.
  static func last(_ status: Int32) -> ElfHookError {
    ElfHookError(status: status, message: String(cString: elfhook_last_error()))
  }
}

/// Runs a C engine call and throws its failure.
@inline(__always)
func check(_ status: Int32) throws(ElfHookError) {
  if status != ELFHOOK_OK.rawValue { throw ElfHookError.last(status) }
}
