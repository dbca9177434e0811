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
  /// The prefixes their names may carry: none (OpenSSL), swift-nio-ssl's BoringSSL.
  private static let prefixes = ["", "CNIOBoringSSL_"]

  /// Attaches to the executable's OpenSSL functions, when it defines them. Called once, with the
  /// hooks' installation; does nothing for an executable without them.
  static func attach() {
    guard let program = try? LoadedImage.all().first(where: { $0.isMainProgram }) else { return }
    let image = Image(pattern: escaped(program.path), header: program.header, loadBias: program.loadBias)
    for prefix in prefixes {
      guard image.function(prefix + "SSL_read") != nil else { continue }
      guard resolveAccessors(prefix: prefix, in: image) else { return }
      let originals = UnsafeMutableRawPointer(cnm_linked_original()).assumingMemoryBound(to: UnsafeMutableRawPointer?.self)
      for (index, name) in hooked.enumerated() {
        // A missing function (BoringSSL has no SSL_read_ex…) or a prologue the engine refuses
        // leaves that one unhooked; the others still count.
        guard let address = image.function(prefix + name) else { continue }
        _ = elfhook_attach(address, UnsafeMutableRawPointer(mutating: linkedSSLHooks[index]), originals + index, nil)
      }
      return
    }
  }

  /// The executable, where its functions are looked up.
  private struct Image {
    /// An fnmatch(3) pattern that matches its path alone.
    let pattern: String
    /// Its ELF header in memory, and its load bias: where its segments are.
    let header: UInt
    let loadBias: UInt

    /// The address of the function `name` defined in the executable, or nil. An exported one
    /// (node's) through the loader's hash tables (`dlsym`, kept when it lies in the
    /// executable's: a walk of node's 70,000-symbol `.dynsym` takes ~0.5 ms a name otherwise); an
    /// unexported one from the file's `.symtab` (`elfhook_find_function`).
    func function(_ name: String) -> UnsafeMutableRawPointer? {
      if let address = dlsym(nil, name), cnm_image_contains(UnsafeRawPointer(bitPattern: header), loadBias, address) {
        return address
      }
      var address: UnsafeMutableRawPointer?
      return elfhook_find_function(pattern, name, &address) == ELFHOOK_OK.rawValue ? address : nil
    }
  }

  /// Fills `cnm_openssl_linked` from the executable; false when its SSL_get_fd or SSL_get_error
  /// is missing (the hooks would have no way to find a connection).
  private static func resolveAccessors(prefix: String, in image: Image) -> Bool {
    let found = { (name: String) in image.function(prefix + name) }
    guard let getFD = found("SSL_get_fd"), let getError = found("SSL_get_error") else { return false }
    var functions = cnm_openssl_functions()
    functions.SSL_get_fd = cast(getFD)
    functions.SSL_get_error = cast(getError)
    functions.SSL_get_version = cast(found("SSL_get_version"))
    functions.SSL_get_servername = cast(found("SSL_get_servername"))
    functions.SSL_is_server = cast(found("SSL_is_server"))
    functions.SSL_get0_alpn_selected = cast(found("SSL_get0_alpn_selected"))
    functions.SSL_is_init_finished = cast(found("SSL_is_init_finished"))
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
