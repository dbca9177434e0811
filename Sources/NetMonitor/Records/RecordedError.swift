#if canImport(Glibc)
  import Glibc
#endif

/// A failure as a record carries it (the `error` object): the hooked call that failed, its code by
/// name, and a readable message.
///
/// JSON keys, in this order: `call`, `code`, `message`. `code` is a symbolic name —
/// `ECONNREFUSED`, `EAI_NONAME`, `SSL_ERROR_SYSCALL` — so records read the same on every
/// architecture; the factories below turn the numbers the hooks saw into names and messages.
public struct RecordedError: Sendable, Hashable {
  /// The hooked function that failed (`connect`, `getaddrinfo`, `SSL_do_handshake`…) (`call`).
  public var call: String
  /// The error's symbolic name (`code`).
  public var code: String
  /// A readable description (`message`).
  public var message: String

  /// Creates an error object from its three fields as they are.
  public init(call: String, code: String, message: String) {
    self.call = call
    self.code = code
    self.message = message
  }

  /// An `errno` failure of `call`: `code` is the constant's name (`ECONNREFUSED`, or `errno 999`
  /// for a number without a name here), `message` is its `strerror` text.
  ///
  /// The corresponding C function is `strerror`.
  public static func errno(_ value: Int32, call: String) -> RecordedError {
    RecordedError(call: call, code: errnoName(value), message: errnoMessage(value))
  }

  /// A `getaddrinfo` failure: `code` is the `EAI_*` name, `message` its `gai_strerror` text. For
  /// `EAI_SYSTEM`, pass the `errno` seen right after the call as `systemErrno`: the message then
  /// names it.
  ///
  /// The corresponding C function is `gai_strerror`.
  public static func addressInfo(
    _ value: Int32, call: String = "getaddrinfo", systemErrno: Int32? = nil
  ) -> RecordedError {
    var message = String(cString: gai_strerror(value))
    if let systemErrno, value == addressInfoSystem {
      message += ": " + errnoMessage(systemErrno) + " (" + errnoName(systemErrno) + ")"
    }
    return RecordedError(call: call, code: addressInfoName(value), message: message)
  }

  /// An OpenSSL failure: `code` is the `SSL_ERROR_*` name of `SSL_get_error`'s result, `message`
  /// the library's own text when the hook could read it (`ERR_error_string_n`), or the name's
  /// meaning.
  public static func ssl(_ value: Int32, call: String, message: String? = nil) -> RecordedError {
    let (name, meaning) = sslName(value)
    return RecordedError(call: call, code: name, message: message ?? meaning)
  }

  /// A GnuTLS failure: `code` is the `GNUTLS_E_*` name of the (negative) result, `message` its
  /// meaning, as `gnutls_strerror` would say it.
  public static func gnutls(_ value: Int32, call: String) -> RecordedError {
    let (name, meaning) = gnutlsName(value)
    return RecordedError(call: call, code: name, message: meaning)
  }

  /// An NSS failure: `code` is the NSPR/NSS error name of `PR_GetError`'s value (negative),
  /// `message` its meaning.
  public static func nss(_ value: Int32, call: String) -> RecordedError {
    let (name, meaning) = nssName(value)
    return RecordedError(call: call, code: name, message: meaning)
  }
}
