import CNetMonitor
import ElfHook
import Synchronization

/// The hooks, in the order of `cnm_hook_names` (and of the `cnm_original_functions` fields that
/// receive their originals): the thirteen C data-path hooks, the Swift ones (OpenSSL's data calls'
/// are C's: ssl_data_path.c), the C hooks of the calls that close descriptors besides close (dup2,
/// dup3, close_range, closefrom), then GnuTLS's and NSS's.
/// Installed once for the life of the process, with the inline hooks of an OpenSSL linked into the
/// executable (``LinkedOpenSSL``).
final class HookInstallation: Sendable {
  private let rebinding = Mutex<RebindingSet?>(nil)

  static var replacements: [UnsafeRawPointer] {
    (0..<cnm_data_path_hook_count()).map { UnsafeRawPointer(cnm_data_path_hook($0)!) } + [
      unsafeBitCast(shutdownHook, to: UnsafeRawPointer.self),
      unsafeBitCast(connectHook, to: UnsafeRawPointer.self),
      unsafeBitCast(acceptHook, to: UnsafeRawPointer.self),
      unsafeBitCast(accept4Hook, to: UnsafeRawPointer.self),
      unsafeBitCast(getsockoptHook, to: UnsafeRawPointer.self),
      unsafeBitCast(getaddrinfoHook, to: UnsafeRawPointer.self),
      unsafeBitCast(sslDoHandshakeHook, to: UnsafeRawPointer.self),
      unsafeBitCast(sslConnectHook, to: UnsafeRawPointer.self),
      unsafeBitCast(sslAcceptHook, to: UnsafeRawPointer.self),
    ] + OpenSSLDataPath.hooks(linked: false)
      + (0..<cnm_descriptor_hook_count()).map { UnsafeRawPointer(cnm_descriptor_hook($0)!) } + [
      unsafeBitCast(gnutlsHandshakeHook, to: UnsafeRawPointer.self),
      unsafeBitCast(gnutlsRecordSendHook, to: UnsafeRawPointer.self),
      unsafeBitCast(gnutlsRecordSend2Hook, to: UnsafeRawPointer.self),
      unsafeBitCast(gnutlsRecordRecvHook, to: UnsafeRawPointer.self),
      unsafeBitCast(gnutlsRecordRecvSeqHook, to: UnsafeRawPointer.self),
      unsafeBitCast(nssForceHandshakeHook, to: UnsafeRawPointer.self),
      unsafeBitCast(nssForceHandshakeWithTimeoutHook, to: UnsafeRawPointer.self),
      unsafeBitCast(prReadHook, to: UnsafeRawPointer.self),
      unsafeBitCast(prWriteHook, to: UnsafeRawPointer.self),
      unsafeBitCast(prRecvHook, to: UnsafeRawPointer.self),
      unsafeBitCast(prSendHook, to: UnsafeRawPointer.self),
    ]
  }

  /// Where the C data path hands what it does not count itself: set before the hooks are in place,
  /// and before the monitor of an injected process reads the call that loaded it.
  static func setTrafficCallbacks() {
    cnm_set_traffic_callbacks(receivedCallback, sentCallback, closeCallback)
    OpenSSLDataPath.setUp()
  }

  func installOnce() throws(ElfHookError) {
    Self.setTrafficCallbacks()
    try rebinding.withLock { (set: inout RebindingSet?) throws(ElfHookError) in
      guard set == nil else { return }
      let replacements = Self.replacements
      precondition(replacements.count == cnm_hook_count(), "one hook per name in cnm_hook_names")
      let pairs = (0..<replacements.count).map { index in
        (symbol: String(cString: cnm_hook_name(index)), replacement: replacements[index])
      }
      // Before the first slot is written: another thread may enter a hook at once, and the hooks
      // call originals the host may not import (connect's asks getsockopt for the socket type).
      cnm_fill_missing_originals()
      set = try RebindingSet(pairs, originalStorage: cnm_original_slot(0))
      LinkedOpenSSL.attach()
      ConnectionsAtExit.install()
    }
  }
}

extension NetMonitor {
  /// For a library injected with `LD_PRELOAD` that exports a hooked name itself (`forwarder`,
  /// which calls `next`, the definition after it): the dynamic linker bound the images' slots to
  /// `forwarder`, so the rebinding took it for the original. The original becomes `next`, so a
  /// hook never goes through the forwarder. Returns the hook of `name` (nil when `name` is not
  /// hooked), for the forwarder to call.
  @_spi(Injection)
  public static func adoptForwarder(
    named name: String, forwarder: UnsafeMutableRawPointer, next: UnsafeMutableRawPointer
  ) -> UnsafeMutableRawPointer? {
    guard let index = (0..<cnm_hook_count()).first(where: { String(cString: cnm_hook_name($0)) == name }) else {
      return nil
    }
    cnm_adopt_original(index, forwarder, next)
    return UnsafeMutableRawPointer(mutating: HookInstallation.replacements[index])
  }
}
