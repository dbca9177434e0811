import CNetMonitor
import ElfHook
import Synchronization

/// The hooks, in the order of `cnm_hook_names` (and of the `cnm_original_functions` fields that
/// receive their originals), installed once for the life of the process.
final class HookInstallation: Sendable {
  private let rebinding = Mutex<RebindingSet?>(nil)

  static var replacements: [UnsafeRawPointer] {
    [
      unsafeBitCast(readHook, to: UnsafeRawPointer.self),
      unsafeBitCast(readvHook, to: UnsafeRawPointer.self),
      unsafeBitCast(recvHook, to: UnsafeRawPointer.self),
      unsafeBitCast(recvfromHook, to: UnsafeRawPointer.self),
      unsafeBitCast(recvmsgHook, to: UnsafeRawPointer.self),
      unsafeBitCast(writeHook, to: UnsafeRawPointer.self),
      unsafeBitCast(writevHook, to: UnsafeRawPointer.self),
      unsafeBitCast(sendHook, to: UnsafeRawPointer.self),
      unsafeBitCast(sendtoHook, to: UnsafeRawPointer.self),
      unsafeBitCast(sendmsgHook, to: UnsafeRawPointer.self),
      unsafeBitCast(sendfileHook, to: UnsafeRawPointer.self),
      unsafeBitCast(closeHook, to: UnsafeRawPointer.self),
      unsafeBitCast(shutdownHook, to: UnsafeRawPointer.self),
      unsafeBitCast(connectHook, to: UnsafeRawPointer.self),
      unsafeBitCast(acceptHook, to: UnsafeRawPointer.self),
      unsafeBitCast(accept4Hook, to: UnsafeRawPointer.self),
      unsafeBitCast(getsockoptHook, to: UnsafeRawPointer.self),
      unsafeBitCast(getaddrinfoHook, to: UnsafeRawPointer.self),
      unsafeBitCast(sslDoHandshakeHook, to: UnsafeRawPointer.self),
      unsafeBitCast(sslConnectHook, to: UnsafeRawPointer.self),
      unsafeBitCast(sslAcceptHook, to: UnsafeRawPointer.self),
      unsafeBitCast(sslReadHook, to: UnsafeRawPointer.self),
      unsafeBitCast(sslReadExHook, to: UnsafeRawPointer.self),
      unsafeBitCast(sslWriteHook, to: UnsafeRawPointer.self),
      unsafeBitCast(sslWriteExHook, to: UnsafeRawPointer.self),
    ]
  }

  func installOnce() throws(ElfHookError) {
    try rebinding.withLock { (set: inout RebindingSet?) throws(ElfHookError) in
      guard set == nil else { return }
      let replacements = Self.replacements
      precondition(replacements.count == cnm_hook_count(), "one hook per name in cnm_hook_names")
      let pairs = (0..<replacements.count).map { index in
        (symbol: String(cString: cnm_hook_name(index)), replacement: replacements[index])
      }
      set = try RebindingSet(pairs, originalStorage: cnm_original_slot(0))
    }
  }
}
