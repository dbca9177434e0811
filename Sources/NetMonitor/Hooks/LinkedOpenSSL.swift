import CElfHook
import CNetMonitor
import ElfHook
import Glibc

/// OpenSSL linked into the executable itself: Node exports its copy's `SSL_read`… in its
/// `.dynsym`; a SwiftNIO program carries BoringSSL's with a `CNIOBoringSSL_` prefix in its
/// `.symtab`. Its own calls to them are direct, so no GOT slot reaches them: the functions are
/// attached to inline (`elfhook_attach`), and reach the same hooks as a shared libssl's
/// (OpenSSLHooks.swift). The accessors those hooks ask (SSL_get_fd, SSL_get_version…) are the
/// same image's functions, never offsets into its structs, whose layouts differ between versions.
/// Only the executable is looked at, once, when the hooks are installed: a library loaded later
/// that links OpenSSL statically is not attached to.
enum LinkedOpenSSL {
  /// The hooked functions, in the order of `cnm_linked_openssl_originals` and `linkedSSLHooks`.
  private static let hooked = [
    "SSL_do_handshake", "SSL_connect", "SSL_accept", "SSL_read", "SSL_read_ex", "SSL_write", "SSL_write_ex",
  ]
  /// The accessors the hooks ask, in the order `resolveAccessors` reads them.
  private static let accessors = [
    "SSL_get_fd", "SSL_get_error", "SSL_get_version", "SSL_get_servername", "SSL_is_server",
    "SSL_get0_alpn_selected", "SSL_is_init_finished",
  ]
  /// The prefixes their names may carry: none (OpenSSL), swift-nio-ssl's BoringSSL.
  private static let prefixes = ["", "CNIOBoringSSL_"]

  /// Attaches to the executable's OpenSSL functions, when it defines them. Called once, with the
  /// hooks' installation; does nothing for an executable without them.
  static func attach() {
    guard let program = try? LoadedImage.all().first(where: { $0.isMainProgram }) else { return }
    let names = hooked + accessors
    let found = functions(prefixes.flatMap { prefix in names.map { prefix + $0 } }, in: program)
    for (index, _) in prefixes.enumerated() {
      let addresses = Array(found[index * names.count..<(index + 1) * names.count])
      guard addresses[hooked.firstIndex(of: "SSL_read")!] != nil,
        resolveAccessors(Array(addresses[hooked.count...]))
      else { continue }
      let originals = UnsafeMutableRawPointer(cnm_linked_original()).assumingMemoryBound(to: UnsafeMutableRawPointer?.self)
      for index in hooked.indices {
        // A missing function (BoringSSL has no SSL_read_ex…) or a prologue the engine refuses
        // leaves that one unhooked; the others still count.
        guard let address = addresses[index] else { continue }
        _ = elfhook_attach(address, UnsafeMutableRawPointer(mutating: linkedSSLHooks[index]), originals + index, nil)
      }
      return
    }
  }

  /// The addresses of the functions `names` that the executable defines (nil for the others).
  /// Exported ones (node's) come from the loader's hash tables (`dlsym`, kept when they lie in the
  /// executable's segments): a walk of node's 70,000-symbol `.dynsym` takes ~0.5 ms a name. When
  /// SSL_read is not exported, all are looked up in one pass over the executable's `.dynsym` and
  /// its file's `.symtab` (`elfhook_find_functions`): an unstripped Swift program's `.symtab` is
  /// read once, not once a name.
  private static func functions(_ names: [String], in program: LoadedImage) -> [UnsafeMutableRawPointer?] {
    let header = UnsafeRawPointer(bitPattern: program.header)
    let exports = { (name: String) -> UnsafeMutableRawPointer? in
      guard let address = dlsym(nil, name), cnm_image_contains(header, program.loadBias, address) else { return nil }
      return address
    }
    // SSL_read under either prefix first: most programs (curl, python3) export neither, and are
    // spared a global look-up of each of the other names (0.07 M instructions at every start).
    if prefixes.contains(where: { exports($0 + "SSL_read") != nil }) {
      return names.map(exports)
    }
    var addresses = [UnsafeMutableRawPointer?](repeating: nil, count: names.count)
    var cNames = names.map { strdup($0) }
    defer { cNames.forEach { free($0) } }
    _ = cNames.withUnsafeMutableBufferPointer { buffer in
      buffer.withMemoryRebound(to: UnsafePointer<CChar>?.self) { constNames in
        elfhook_find_functions(escaped(program.path), constNames.baseAddress, names.count, &addresses)
      }
    }
    return addresses  // nil for each name it did not find
  }

  /// Fills `cnm_openssl_linked` from the executable's accessors (in the order of `accessors`);
  /// false when SSL_get_fd or SSL_get_error is missing (the hooks would have no way to find a
  /// connection).
  private static func resolveAccessors(_ found: [UnsafeMutableRawPointer?]) -> Bool {
    guard let getFD = found[0], let getError = found[1] else { return false }
    var functions = cnm_openssl_functions()
    functions.SSL_get_fd = cast(getFD)
    functions.SSL_get_error = cast(getError)
    functions.SSL_get_version = cast(found[2])
    functions.SSL_get_servername = cast(found[3])
    functions.SSL_is_server = cast(found[4])
    functions.SSL_get0_alpn_selected = cast(found[5])
    functions.SSL_is_init_finished = cast(found[6])
    cnm_ssl_linked().pointee = functions
    return true
  }

  /// A function's address as the C function type of the field it goes in.
  private static func cast<Function>(_ address: UnsafeMutableRawPointer?) -> Function? {
    address.map { unsafeBitCast($0, to: Function.self) }
  }

  /// `path` as an fnmatch(3) pattern that matches only itself.
  private static func escaped(_ path: String) -> String {
    var pattern = ""
    for character in path {
      if "*?[]\\".contains(character) { pattern.append("\\") }
      pattern.append(character)
    }
    return pattern
  }
}
