#if canImport(Glibc)
  import Glibc
#endif

// Names for the numeric codes the hooks see. glibc's `strerrorname_np` is not visible to Swift
// (it needs `_GNU_SOURCE`), and the `EAI_*` values beyond POSIX are GNU extensions, so the tables
// are here: the errno values come from Glibc by name, the GNU `EAI_*` values are glibc's.

/// The `EAI_SYSTEM` value (a GNU extension, not imported by Glibc).
let addressInfoSystem: Int32 = -11

private let errnoNames: [(Int32, String)] = [
  (EPERM, "EPERM"), (ENOENT, "ENOENT"), (ESRCH, "ESRCH"), (EINTR, "EINTR"), (EIO, "EIO"),
  (ENXIO, "ENXIO"), (E2BIG, "E2BIG"), (ENOEXEC, "ENOEXEC"), (EBADF, "EBADF"), (ECHILD, "ECHILD"),
  (EAGAIN, "EAGAIN"), (ENOMEM, "ENOMEM"), (EACCES, "EACCES"), (EFAULT, "EFAULT"),
  (EBUSY, "EBUSY"), (EEXIST, "EEXIST"), (EXDEV, "EXDEV"), (ENODEV, "ENODEV"),
  (ENOTDIR, "ENOTDIR"), (EISDIR, "EISDIR"), (EINVAL, "EINVAL"), (ENFILE, "ENFILE"),
  (EMFILE, "EMFILE"), (ENOTTY, "ENOTTY"), (EFBIG, "EFBIG"), (ENOSPC, "ENOSPC"),
  (ESPIPE, "ESPIPE"), (EROFS, "EROFS"), (EMLINK, "EMLINK"), (EPIPE, "EPIPE"),
  (ERANGE, "ERANGE"), (ENAMETOOLONG, "ENAMETOOLONG"), (ENOSYS, "ENOSYS"), (ELOOP, "ELOOP"),
  (ENOTSOCK, "ENOTSOCK"), (EDESTADDRREQ, "EDESTADDRREQ"), (EMSGSIZE, "EMSGSIZE"),
  (EPROTOTYPE, "EPROTOTYPE"), (ENOPROTOOPT, "ENOPROTOOPT"), (EPROTONOSUPPORT, "EPROTONOSUPPORT"),
  (EOPNOTSUPP, "EOPNOTSUPP"), (EAFNOSUPPORT, "EAFNOSUPPORT"), (EADDRINUSE, "EADDRINUSE"),
  (EADDRNOTAVAIL, "EADDRNOTAVAIL"), (ENETDOWN, "ENETDOWN"), (ENETUNREACH, "ENETUNREACH"),
  (ENETRESET, "ENETRESET"), (ECONNABORTED, "ECONNABORTED"), (ECONNRESET, "ECONNRESET"),
  (ENOBUFS, "ENOBUFS"), (EISCONN, "EISCONN"), (ENOTCONN, "ENOTCONN"),
  (ESHUTDOWN, "ESHUTDOWN"), (ETIMEDOUT, "ETIMEDOUT"), (ECONNREFUSED, "ECONNREFUSED"),
  (EHOSTDOWN, "EHOSTDOWN"), (EHOSTUNREACH, "EHOSTUNREACH"), (EALREADY, "EALREADY"),
  (EINPROGRESS, "EINPROGRESS"), (EPROTO, "EPROTO"), (EDQUOT, "EDQUOT"),
  (ECANCELED, "ECANCELED"), (EOVERFLOW, "EOVERFLOW"),
]

private let addressInfoNames: [(Int32, String)] = [
  (EAI_BADFLAGS, "EAI_BADFLAGS"), (EAI_NONAME, "EAI_NONAME"), (EAI_AGAIN, "EAI_AGAIN"),
  (EAI_FAIL, "EAI_FAIL"), (-5, "EAI_NODATA"), (EAI_FAMILY, "EAI_FAMILY"),
  (EAI_SOCKTYPE, "EAI_SOCKTYPE"), (EAI_SERVICE, "EAI_SERVICE"), (-9, "EAI_ADDRFAMILY"),
  (EAI_MEMORY, "EAI_MEMORY"), (addressInfoSystem, "EAI_SYSTEM"), (EAI_OVERFLOW, "EAI_OVERFLOW"),
  (-100, "EAI_INPROGRESS"), (-101, "EAI_CANCELED"), (-102, "EAI_NOTCANCELED"),
  (-103, "EAI_ALLDONE"), (-104, "EAI_INTR"), (-105, "EAI_IDN_ENCODE"),
]

// The values are OpenSSL's public, stable `SSL_ERROR_*` constants (OpenSSL is never linked here).
private let sslNames: [(Int32, String, String)] = [
  (0, "SSL_ERROR_NONE", "no error"),
  (1, "SSL_ERROR_SSL", "TLS protocol or library error"),
  (2, "SSL_ERROR_WANT_READ", "operation needs to read more data"),
  (3, "SSL_ERROR_WANT_WRITE", "operation needs to write more data"),
  (4, "SSL_ERROR_WANT_X509_LOOKUP", "certificate callback asked to be called again"),
  (5, "SSL_ERROR_SYSCALL", "I/O error or unexpected end of stream"),
  (6, "SSL_ERROR_ZERO_RETURN", "peer closed the TLS connection"),
  (7, "SSL_ERROR_WANT_CONNECT", "underlying connect is not complete"),
  (8, "SSL_ERROR_WANT_ACCEPT", "underlying accept is not complete"),
  (9, "SSL_ERROR_WANT_ASYNC", "asynchronous engine operation in progress"),
  (10, "SSL_ERROR_WANT_ASYNC_JOB", "no asynchronous job available"),
  (11, "SSL_ERROR_WANT_CLIENT_HELLO_CB", "client hello callback asked to be called again"),
  (12, "SSL_ERROR_WANT_RETRY_VERIFY", "verify callback asked to be called again"),
]

/// `ECONNREFUSED` for `ECONNREFUSED`; `errno N` for a number without a name here.
func errnoName(_ value: Int32) -> String {
  for (code, name) in errnoNames where code == value { return name }
  return "errno \(value)"
}

/// The `strerror` text. glibc returns its static, read-only text for known values (and a
/// thread-local buffer for unknown ones), so the call is safe on the recorder thread.
func errnoMessage(_ value: Int32) -> String {
  guard let text = strerror(value) else { return "Unknown error \(value)" }
  return String(cString: text)
}

func addressInfoName(_ value: Int32) -> String {
  for (code, name) in addressInfoNames where code == value { return name }
  return "EAI \(value)"
}

func sslName(_ value: Int32) -> (name: String, meaning: String) {
  for (code, name, meaning) in sslNames where code == value { return (name, meaning) }
  return ("SSL_ERROR \(value)", "unknown TLS error")
}

// GnuTLS's public, stable error numbers (gnutls/gnutls.h), for the failures a handshake ends with.
private let gnutlsNames: [(Int32, String, String)] = [
  (-9, "GNUTLS_E_UNEXPECTED_PACKET_LENGTH", "A TLS record packet was received with an unexpected length"),
  (-12, "GNUTLS_E_FATAL_ALERT_RECEIVED", "A TLS fatal alert has been received"),
  (-15, "GNUTLS_E_UNEXPECTED_PACKET", "An unexpected TLS packet was received"),
  (-43, "GNUTLS_E_CERTIFICATE_ERROR", "Error in the certificate"),
  (-53, "GNUTLS_E_PUSH_ERROR", "Error in the push function"),
  (-54, "GNUTLS_E_PULL_ERROR", "Error in the pull function"),
  (-110, "GNUTLS_E_PREMATURE_TERMINATION", "The TLS connection was non-properly terminated"),
  (-348, "GNUTLS_E_CERTIFICATE_VERIFICATION_ERROR", "Error verifying the certificate"),
  (-409, "GNUTLS_E_NO_COMMON_KEY_SHARE", "No common key share with peer"),
]

func gnutlsName(_ value: Int32) -> (name: String, meaning: String) {
  for (code, name, meaning) in gnutlsNames where code == value { return (name, meaning) }
  return ("GNUTLS_E \(value)", "GnuTLS error \(value)")
}

// NSPR's and NSS's public, stable error numbers (prerr.h, secerr.h, sslerr.h), for the failures a
// handshake ends with.
private let nssNames: [(Int32, String, String)] = [
  (-5961, "PR_CONNECT_RESET_ERROR", "TCP connection reset by peer"),
  (-5938, "PR_END_OF_FILE_ERROR", "Encountered end of file"),
  (-8179, "SEC_ERROR_UNKNOWN_ISSUER", "Peer's certificate issuer is not recognized"),
  (-8172, "SEC_ERROR_UNTRUSTED_ISSUER", "Peer's certificate issuer has been marked as not trusted"),
  (-12276, "SSL_ERROR_BAD_CERT_DOMAIN", "Unable to communicate securely with peer: requested domain name does not match the server's certificate"),
  (-12227, "SSL_ERROR_HANDSHAKE_FAILURE_ALERT", "SSL peer was unable to negotiate an acceptable set of security parameters"),
]

func nssName(_ value: Int32) -> (name: String, meaning: String) {
  for (code, name, meaning) in nssNames where code == value { return (name, meaning) }
  return ("NSS error \(value)", "NSS error \(value)")
}
