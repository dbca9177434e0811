/* cnm_originals.h — the functions the hooks call: the originals of the functions they replace,
 * and the TLS libraries' functions they call but never hook (part of cnetmonitor.h).
 *
 * The originals are one C global, so a hook reaches its original with one load (a Swift global
 * would add a swift_once check in some builds). The engine writes each original here
 * (elfhook_rebind's `replaced`), in the order of cnm_hook_names. OpenSSL is never linked: its
 * functions are typed with `void *` for SSL *. */
#ifndef CNM_ORIGINALS_H
#define CNM_ORIGINALS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <netdb.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>

typedef struct cnm_original_functions {
  ssize_t (*read)(int, void *, size_t);
  ssize_t (*readv)(int, const struct iovec *, int);
  ssize_t (*recv)(int, void *, size_t, int);
  ssize_t (*recvfrom)(int, void *, size_t, int, struct sockaddr *, socklen_t *);
  ssize_t (*recvmsg)(int, struct msghdr *, int);
  ssize_t (*write)(int, const void *, size_t);
  ssize_t (*writev)(int, const struct iovec *, int);
  ssize_t (*send)(int, const void *, size_t, int);
  ssize_t (*sendto)(int, const void *, size_t, int, const struct sockaddr *, socklen_t);
  ssize_t (*sendmsg)(int, const struct msghdr *, int);
  ssize_t (*sendfile)(int, int, off_t *, size_t);
  ssize_t (*sendfile64)(int, int, off_t *, size_t); /* what programs built with _FILE_OFFSET_BITS=64 import (nginx) */
  int (*close)(int);
  int (*shutdown)(int, int);
  int (*connect)(int, const struct sockaddr *, socklen_t);
  int (*accept)(int, struct sockaddr *, socklen_t *);
  int (*accept4)(int, struct sockaddr *, socklen_t *, int);
  int (*getsockopt)(int, int, int, void *, socklen_t *);
  int (*getaddrinfo)(const char *, const char *, const struct addrinfo *, struct addrinfo **);
  int (*SSL_do_handshake)(void *);
  int (*SSL_connect)(void *);
  int (*SSL_accept)(void *);
  int (*SSL_read)(void *, void *, int);
  int (*SSL_read_ex)(void *, void *, size_t, size_t *);
  int (*SSL_write)(void *, const void *, int);
  int (*SSL_write_ex)(void *, const void *, size_t, size_t *);
  int (*dup2)(int, int);
  int (*dup3)(int, int, int);
  int (*close_range)(unsigned int, unsigned int, int);
  void (*closefrom)(int);
  /* GnuTLS (gnutls_session_t typed void *), after the descriptor calls: */
  int (*gnutls_handshake)(void *);
  ssize_t (*gnutls_record_send)(void *, const void *, size_t);
  ssize_t (*gnutls_record_send2)(void *, const void *, size_t, size_t, unsigned);
  ssize_t (*gnutls_record_recv)(void *, void *, size_t);
  ssize_t (*gnutls_record_recv_seq)(void *, void *, size_t, unsigned char *);
  /* NSS (PRFileDesc * typed void *; SECStatus and PRInt32 as int): */
  int (*SSL_ForceHandshake)(void *);
  int (*SSL_ForceHandshakeWithTimeout)(void *, uint32_t);
  int (*PR_Read)(void *, void *, int);
  int (*PR_Write)(void *, const void *, int);
  int (*PR_Recv)(void *, void *, int, int, uint32_t);
  int (*PR_Send)(void *, const void *, int, int, uint32_t);
} cnm_original_functions;

/* Hidden: the x86_64 data-path hooks address it directly (RIP-relative), in a shared library too. */
extern cnm_original_functions cnm_originals __attribute__((visibility("hidden")));

/* The symbol names, in the order of the fields above: cnm_hook_name(0) … cnm_hook_name(count - 1). */
size_t cnm_hook_count(void);
const char *cnm_hook_name(size_t index);

/* Where the engine stores the original of cnm_hook_names[index]. */
static inline void **cnm_original_slot(size_t index) { return (void **)&cnm_originals + index; }

/* The hooks call originals of functions the host may not import itself (connect's hook asks
 * getsockopt for the socket type): every original not yet known is looked up by name in the global
 * scope. Called before the rebinding, which then puts each slot's own original in its place: a
 * thread that enters a hook as soon as its slot is written finds every original set. */
void cnm_fill_missing_originals(void);

/* The original of cnm_hook_names[index] becomes `next` if it is `forwarder` or unset: an LD_PRELOAD
 * library that exports the name itself forwards to `next` (NetMonitor.adoptForwarder). */
void cnm_adopt_original(size_t index, void *forwarder, void *next);

/* OpenSSL functions the TLS hooks call but never hook, found at run time next to the hooked ones. */
typedef struct cnm_openssl_functions {
  int (*SSL_get_fd)(const void *);
  int (*SSL_get_error)(const void *, int);
  const char *(*SSL_get_version)(const void *);
  const char *(*SSL_get_servername)(const void *, int);
  int (*SSL_is_server)(const void *);
  /* The protocol ALPN chose (OpenSSL 1.0.2 on; NULL in a library without it). */
  void (*SSL_get0_alpn_selected)(const void *, const unsigned char **, unsigned int *);
  /* Whether the handshake is over: it may end inside an SSL_read that returns no data. */
  int (*SSL_is_init_finished)(const void *);
} cnm_openssl_functions;

/* The shared libssl's (GOT path), and those of a copy linked into the executable (inline path). */
extern cnm_openssl_functions cnm_openssl;
extern cnm_openssl_functions cnm_openssl_linked;
static inline cnm_openssl_functions *cnm_ssl_linked(void) { return &cnm_openssl_linked; }

/* The originals of the OpenSSL functions of a copy linked into the executable (node; BoringSSL in
 * a SwiftNIO program, prefixed), reached by inline hooks (elfhook_attach): trampolines the engine
 * writes here and keeps current. */
typedef struct cnm_linked_openssl_originals {
  int (*SSL_do_handshake)(void *);
  int (*SSL_connect)(void *);
  int (*SSL_accept)(void *);
  int (*SSL_read)(void *, void *, int);
  int (*SSL_read_ex)(void *, void *, size_t, size_t *);
  int (*SSL_write)(void *, const void *, int);
  int (*SSL_write_ex)(void *, const void *, size_t, size_t *);
} cnm_linked_openssl_originals;
extern cnm_linked_openssl_originals cnm_linked_originals;
static inline cnm_linked_openssl_originals *cnm_linked_original(void) { return &cnm_linked_originals; }

/* GnuTLS functions the GnuTLS hooks call but never hook, found next to the hooked ones. */
typedef struct cnm_gnutls_datum { /* gnutls_datum_t */
  unsigned char *data;
  unsigned int size;
} cnm_gnutls_datum;
typedef struct cnm_gnutls_functions {
  int (*transport_get_int)(void *);
  int (*protocol_get_version)(void *);
  const char *(*protocol_get_name)(int);
  int (*alpn_get_selected_protocol)(void *, cnm_gnutls_datum *);
  int (*error_is_fatal)(int);
} cnm_gnutls_functions;
extern cnm_gnutls_functions cnm_gnutls;
static inline cnm_gnutls_functions *cnm_gnutls_library(void) { return &cnm_gnutls; }
/* Fills cnm_gnutls from the library that defines `any_gnutls_function`, as cnm_resolve_openssl. */
bool cnm_resolve_gnutls(void *any_gnutls_function);

/* NSS functions the NSS hooks call but never hook: from the library that defines the hooked
 * SSL_ForceHandshake (libssl3), and NSPR's error (global scope). SSLChannelInfo is NSS's public,
 * versioned structure: the caller says how much of it to fill (at most what the library knows),
 * and its first field how much was. Only its first fields are asked for. */
typedef struct cnm_nss_channel_info {
  uint32_t length;
  uint16_t protocol_version; /* 0x0304: TLS 1.3 */
  uint16_t cipher_suite;
} cnm_nss_channel_info;
typedef struct cnm_nss_functions {
  int (*SSL_GetChannelInfo)(void *, cnm_nss_channel_info *, unsigned int);
  /* (fd, SSLNextProtoState *, buffer, *length, capacity) */
  int (*SSL_GetNextProto)(void *, int *, unsigned char *, unsigned int *, unsigned int);
  int32_t (*PR_GetError)(void);
} cnm_nss_functions;
extern cnm_nss_functions cnm_nss;
static inline cnm_nss_functions *cnm_nss_library(void) { return &cnm_nss; }
/* Fills cnm_nss from the library that defines `any_nss_ssl_function`; false when not found. */
bool cnm_resolve_nss(void *any_nss_ssl_function);

/* Whether `address` lies in a loaded segment of the image whose ELF header is at `header` and
 * whose load bias is `load_bias` (its program headers, in memory). dladdr would say too, but walks
 * every symbol of the image to name the nearest: ~0.5 ms in node's. */
bool cnm_image_contains(const void *header, uintptr_t load_bias, const void *address);

/* Fills cnm_openssl from the library that defines `any_ssl_function` (dladdr, then dlsym on that
 * library's handle, since libssl may be loaded RTLD_LOCAL). Returns false when not found. */
bool cnm_resolve_openssl(void *any_ssl_function);

#endif
