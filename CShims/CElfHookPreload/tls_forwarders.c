/* The TLS libraries' calls the monitor hooks, exported (elfhook_preload.h): OpenSSL's handshake,
 * read and write, GnuTLS's, and NSS's handshake and NSPR's I/O. A TLS session over a connection
 * that the injected library tracks itself (clients.c) must be seen from its first call: its
 * handshake's time, version and ALPN, and the plaintext. So while any connection is tracked here,
 * the first such call loads the monitor, which takes the connections over, and goes through the
 * monitor's hook; otherwise (no connection yet, or the monitor already running) it goes straight
 * to the library's function. The dynamic linker binds a library's callers (libcurl, python's _ssl,
 * wget) here only while the library is loaded: a process without one never calls these. */
#include "elfhook_preload.h"

#include <errno.h>

/* The function a call of `which` goes to: the monitor's hook when it must see it; NULL only when
 * the library's own function is not there (then the call fails as a missing TLS library's would). */
static void *through(elfhook_export which, const void *caller) {
  if (elfhook_clients_live()) return elfhook_route(which, caller);
  return elfhook_next(which);
}

#define TLS_FORWARDER(result, name, failure, parameters, arguments)                      \
  result elfhook_forward_##name parameters {                                             \
    result(*function) parameters = through(ELFHOOK_FORWARD_INDEX_##name, __builtin_return_address(0)); \
    if (!function) {                                                                     \
      errno = ENOSYS;                                                                    \
      return failure;                                                                    \
    }                                                                                    \
    return function arguments;                                                           \
  }                                                                                      \
  extern result name parameters __attribute__((alias("elfhook_forward_" #name), visibility("default")));

#define ELFHOOK_FORWARD_INDEX_SSL_do_handshake ELFHOOK_SSL_DO_HANDSHAKE
#define ELFHOOK_FORWARD_INDEX_SSL_connect ELFHOOK_SSL_CONNECT
#define ELFHOOK_FORWARD_INDEX_SSL_accept ELFHOOK_SSL_ACCEPT
#define ELFHOOK_FORWARD_INDEX_SSL_read ELFHOOK_SSL_READ
#define ELFHOOK_FORWARD_INDEX_SSL_read_ex ELFHOOK_SSL_READ_EX
#define ELFHOOK_FORWARD_INDEX_SSL_write ELFHOOK_SSL_WRITE
#define ELFHOOK_FORWARD_INDEX_SSL_write_ex ELFHOOK_SSL_WRITE_EX
#define ELFHOOK_FORWARD_INDEX_gnutls_handshake ELFHOOK_GNUTLS_HANDSHAKE
#define ELFHOOK_FORWARD_INDEX_gnutls_record_send ELFHOOK_GNUTLS_RECORD_SEND
#define ELFHOOK_FORWARD_INDEX_gnutls_record_send2 ELFHOOK_GNUTLS_RECORD_SEND2
#define ELFHOOK_FORWARD_INDEX_gnutls_record_recv ELFHOOK_GNUTLS_RECORD_RECV
#define ELFHOOK_FORWARD_INDEX_gnutls_record_recv_seq ELFHOOK_GNUTLS_RECORD_RECV_SEQ
#define ELFHOOK_FORWARD_INDEX_SSL_ForceHandshake ELFHOOK_SSL_FORCE_HANDSHAKE
#define ELFHOOK_FORWARD_INDEX_SSL_ForceHandshakeWithTimeout ELFHOOK_SSL_FORCE_HANDSHAKE_WITH_TIMEOUT
#define ELFHOOK_FORWARD_INDEX_PR_Read ELFHOOK_PR_READ
#define ELFHOOK_FORWARD_INDEX_PR_Write ELFHOOK_PR_WRITE
#define ELFHOOK_FORWARD_INDEX_PR_Recv ELFHOOK_PR_RECV
#define ELFHOOK_FORWARD_INDEX_PR_Send ELFHOOK_PR_SEND

/* OpenSSL: -1 is a failure its callers check (SSL_get_error then says SSL_ERROR_SYSCALL). */
TLS_FORWARDER(int, SSL_do_handshake, -1, (void *ssl), (ssl))
TLS_FORWARDER(int, SSL_connect, -1, (void *ssl), (ssl))
TLS_FORWARDER(int, SSL_accept, -1, (void *ssl), (ssl))
TLS_FORWARDER(int, SSL_read, -1, (void *ssl, void *buffer, int count), (ssl, buffer, count))
TLS_FORWARDER(int, SSL_read_ex, 0, (void *ssl, void *buffer, size_t count, size_t *read), (ssl, buffer, count, read))
TLS_FORWARDER(int, SSL_write, -1, (void *ssl, const void *buffer, int count), (ssl, buffer, count))
TLS_FORWARDER(int, SSL_write_ex, 0, (void *ssl, const void *buffer, size_t count, size_t *written),
              (ssl, buffer, count, written))
/* GnuTLS: GNUTLS_E_INTERNAL_ERROR (-59). */
TLS_FORWARDER(int, gnutls_handshake, -59, (void *session), (session))
TLS_FORWARDER(ssize_t, gnutls_record_send, -59, (void *session, const void *data, size_t size), (session, data, size))
TLS_FORWARDER(ssize_t, gnutls_record_send2, -59,
              (void *session, const void *data, size_t size, size_t pad, unsigned flags),
              (session, data, size, pad, flags))
TLS_FORWARDER(ssize_t, gnutls_record_recv, -59, (void *session, void *data, size_t size), (session, data, size))
TLS_FORWARDER(ssize_t, gnutls_record_recv_seq, -59, (void *session, void *data, size_t size, unsigned char *sequence),
              (session, data, size, sequence))
/* NSS and NSPR: SECFailure and -1. */
TLS_FORWARDER(int, SSL_ForceHandshake, -1, (void *fd), (fd))
TLS_FORWARDER(int, SSL_ForceHandshakeWithTimeout, -1, (void *fd, uint32_t timeout), (fd, timeout))
TLS_FORWARDER(int32_t, PR_Read, -1, (void *fd, void *buffer, int32_t amount), (fd, buffer, amount))
TLS_FORWARDER(int32_t, PR_Write, -1, (void *fd, const void *buffer, int32_t amount), (fd, buffer, amount))
TLS_FORWARDER(int32_t, PR_Recv, -1, (void *fd, void *buffer, int32_t amount, int32_t flags, uint32_t timeout),
              (fd, buffer, amount, flags, timeout))
TLS_FORWARDER(int32_t, PR_Send, -1, (void *fd, const void *buffer, int32_t amount, int32_t flags, uint32_t timeout),
              (fd, buffer, amount, flags, timeout))
