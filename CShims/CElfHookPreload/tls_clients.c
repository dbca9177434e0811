/* OpenSSL sessions over the connections clients.c tracks, recorded by the injected library too
 * (elfhook_preload.h).
 *
 * A `curl https://…` that loaded the monitor at its first TLS call paid ~1.5 ms more than the same
 * `curl` over plaintext (BENCHMARKS.md). So while connections are tracked here, the triggers of
 * OpenSSL's handshake, read and write (tls_triggers.c) come here first, and a session over one of
 * those connections is recorded as the monitor's TLS hooks record it (OpenSSLHooks.swift):
 *
 * - Pairing: a session is paired with its connection by the socket calls of its first handshake
 *   call (libcurl gives OpenSSL a BIO of its own, so SSL_get_fd knows no descriptor), else by
 *   SSL_get_fd, else, for a session whose ciphertext moves outside its calls (a memory BIO:
 *   python's asyncio), by the ClientHello its thread sends next (the monitor's TLSJoin). From then
 *   on the connection's socket bytes are ciphertext, only counted.
 * - The handshake: its first call starts the clock; the call after which it is over gives its end,
 *   version, ALPN protocol and server name, and the replay's template is made again with them.
 *   A handshake that fails for good is the connection's error (SSL_do_handshake, SSL_get_error's
 *   code), as the monitor records it.
 * - Plaintext: counted, and taken by the replay while it is part of a simple exchange
 *   (cnm_replay_take_plaintext).
 *
 * What the replay refuses, and a protocol ALPN chose other than HTTP/1.1 (h2), load the monitor,
 * which takes the connections over with their sessions' pairings (cnm_handoff), and is handed the
 * call's plaintext (elfhook_monitor_plaintext). A session this cannot pair before it moves
 * plaintext, SSL_accept, and GnuTLS's and NSS's calls go through the monitor, loaded first, as
 * before. Nothing here allocates on a call's way but OpenSSL's functions' look-up at the first
 * (dlopen of the loaded libssl, as the monitor's hooks do); errno is the call's. */
#include "client_entry.h"
#include "elfhook_preload.h"

#include <errno.h>
#include <string.h>

enum { SSL_ERROR_WANT_READ = 2, SSL_ERROR_WANT_WRITE = 3, TLSEXT_NAMETYPE_HOST_NAME = 0 };
enum { HOOKED_CALL_SSL_HANDSHAKE = 2 }; /* HookedCall.sslHandshake */

/* The OpenSSL call this thread is inside (the outermost), when it began, and whether its session
 * was unpaired when it began: then its socket calls pair it. */
static __thread void *inside_ssl __attribute__((tls_model("initial-exec")));
static __thread uint64_t inside_start __attribute__((tls_model("initial-exec")));
static __thread bool inside_unpaired __attribute__((tls_model("initial-exec")));
/* The last session whose handshake call this thread made without moving a byte on a socket, and
 * when that call began: its ClientHello is the next TLS record the thread sends on a connection. */
static __thread void *unjoined_ssl __attribute__((tls_model("initial-exec")));
static __thread uint64_t unjoined_start __attribute__((tls_model("initial-exec")));

enum { TLS_HANDSHAKE_RECORD = 0x16 }; /* a TLS record's first byte: its content type */

static bool is_handshake(elfhook_export which) {
  return which == ELFHOOK_SSL_CONNECT || which == ELFHOOK_SSL_DO_HANDSHAKE || which == ELFHOOK_SSL_ACCEPT;
}

static bool is_read(elfhook_export which) { return which == ELFHOOK_SSL_READ || which == ELFHOOK_SSL_READ_EX; }

/* Calls `function`, an OpenSSL call of kind `which`, and sets `moved` to the plaintext bytes it moved. */
static int call(void *function, elfhook_export which, void *ssl, void *buffer, size_t count, size_t *done,
                size_t *moved) {
  int result;
  *moved = 0;
  switch (which) {
  case ELFHOOK_SSL_READ:
  case ELFHOOK_SSL_WRITE:
    result = ((int (*)(void *, void *, int))function)(ssl, buffer, (int)count);
    if (result > 0) *moved = (size_t)result;
    return result;
  case ELFHOOK_SSL_READ_EX:
  case ELFHOOK_SSL_WRITE_EX:
    result = ((int (*)(void *, void *, size_t, size_t *))function)(ssl, buffer, count, done);
    if (result == 1 && done) *moved = *done;
    return result;
  default:
    return ((int (*)(void *))function)(ssl);
  }
}

/* From the handshake's first call: the connection's socket bytes are ciphertext (only counted:
 * nothing of them is read), and the handshake's clock starts at `start`. */
static void mark_tls(elfhook_client *connection, uint64_t start) {
  if (!connection->head.is_tls) {
    connection->head.is_tls = 1;
    connection->core.is_tls = 1;
    connection->head.watch_sent = CNM_WATCH_NONE;
    connection->head.watch_received = CNM_WATCH_NONE;
  }
  if (!connection->core.tls_start) connection->core.tls_start = start;
}

void elfhook_tls_client_socket_call(elfhook_client *connection, bool received, const void *buffer,
                                    const struct iovec *vector, int vector_count) {
  if (connection->ssl || connection->head.is_tls) return;
  if (inside_unpaired) {
    connection->ssl = inside_ssl;
    inside_unpaired = false;
    mark_tls(connection, inside_start);
    return;
  }
  if (!unjoined_ssl || received || inside_ssl || connection->head.bytes_sent || connection->head.bytes_received) return;
  const unsigned char *first = buffer ? buffer : vector_count > 0 && vector[0].iov_len ? vector[0].iov_base : NULL;
  if (!first || first[0] != TLS_HANDSHAKE_RECORD) return;
  connection->ssl = unjoined_ssl;
  mark_tls(connection, unjoined_start);
  unjoined_ssl = NULL;
}

/* The connection `ssl` is paired with; or, when its session has no pairing yet, the tracked
 * connection SSL_get_fd names, paired now. NULL when neither. */
static elfhook_client *paired(void *ssl) {
  uint32_t end = elfhook_clients_end();
  for (uint32_t fd = 0; fd < end; fd++) {
    if (cnm_tracked[fd] && elfhook_client_entry((int)fd)->ssl == ssl) return elfhook_client_entry((int)fd);
  }
  if (!cnm_openssl.SSL_get_fd) return NULL;
  int fd = cnm_openssl.SSL_get_fd(ssl);
  if (!elfhook_client_tracked(fd)) return NULL;
  elfhook_client *connection = elfhook_client_entry(fd);
  connection->ssl = ssl;
  return connection;
}

/* Sets a FixedText `field` to `length` bytes of `text` (not NUL-terminated), as many as it holds. */
#define SET_TEXT(field, text, length)                                                          \
  do {                                                                                         \
    size_t kept_ = (length) < sizeof(field).bytes ? (length) : sizeof(field).bytes;            \
    memcpy((field).bytes, (text), kept_);                                                      \
    (field).count = (int64_t)kept_;                                                            \
  } while (0)

/* The handshake is over: its end, version, ALPN protocol and server name (the host, when no lookup
 * named it), and the replay's template made with them. True when ALPN chose a protocol the replay
 * does not read (h2): the monitor takes the connection. */
static bool handshake_over(elfhook_client *connection, void *ssl) {
  cnm_connection_core *core = &connection->core;
  core->tls_end = cnm_monotonic_ns();
  const char *version = cnm_openssl.SSL_get_version ? cnm_openssl.SSL_get_version(ssl) : NULL;
  if (version) SET_TEXT(core->tls_version, version, strlen(version));
  const unsigned char *protocol = NULL;
  unsigned int protocol_length = 0;
  if (cnm_openssl.SSL_get0_alpn_selected) cnm_openssl.SSL_get0_alpn_selected(ssl, &protocol, &protocol_length);
  if (protocol && protocol_length) SET_TEXT(core->tls_alpn, protocol, protocol_length);
  if (core->host.count == 0 && cnm_openssl.SSL_get_servername) {
    const char *name = cnm_openssl.SSL_get_servername(ssl, TLSEXT_NAMETYPE_HOST_NAME);
    if (name) SET_TEXT(core->host, name, strlen(name));
  }
  /* Before any exchange (OpenSSL moves no plaintext before the handshake is over). */
  if (__atomic_load_n(&connection->head.replay_state, __ATOMIC_ACQUIRE) == CNM_REPLAY_ARMED)
    elfhook_client_rearm(connection);
  static const char http11[] = "http/1.1";
  return protocol_length != 0 &&
         !(protocol_length == sizeof http11 - 1 && memcmp(protocol, http11, sizeof http11 - 1) == 0);
}

static void handshake_failed(elfhook_client *connection, int code) {
  cnm_connection_core *core = &connection->core;
  core->tls_end = cnm_monotonic_ns();
  core->phase = CNM_PHASE_FAILED;
  if (!core->error_call) {
    core->error_call = HOOKED_CALL_SSL_HANDSHAKE;
    core->error_code = code;
  }
}

/* The call as the monitor makes it: loaded first (or the process runs unmonitored: the function
 * the slot held). */
static int through_monitor(elfhook_export which, void *ssl, void *buffer, size_t count, size_t *done,
                           const void *caller) {
  size_t moved;
  void *function = elfhook_route(which, caller);
  if (!function) {
    errno = ENOSYS;
    return which == ELFHOOK_SSL_READ_EX || which == ELFHOOK_SSL_WRITE_EX ? 0 : -1;
  }
  return call(function, which, ssl, buffer, count, done, &moved);
}

int elfhook_tls_client_call(elfhook_export which, void *ssl, void *buffer, size_t count, size_t *done,
                            const void *caller) {
  void *function = elfhook_next(which);
  size_t moved;
  /* OpenSSL calling its own hooked function: the outermost call counts. */
  if (function && ssl && inside_ssl == ssl) return call(function, which, ssl, buffer, count, done, &moved);
  if (!function || !ssl || which == ELFHOOK_SSL_ACCEPT) return through_monitor(which, ssl, buffer, count, done, caller);

  bool handshake = is_handshake(which), received = is_read(which);
  int saved = errno;
  cnm_resolve_openssl(function); /* once: the rest of OpenSSL's functions, from the same libssl */
  uint64_t start = cnm_monotonic_ns();
  bool open = elfhook_clients_enter();
  elfhook_client *connection = open ? paired(ssl) : NULL;
  if (connection) mark_tls(connection, start);
  elfhook_clients_leave();
  /* Plaintext that no connection here can be given to: the monitor pairs it (TLSJoin). */
  if (!open || (!connection && !handshake)) {
    errno = saved;
    return through_monitor(which, ssl, buffer, count, done, caller);
  }

  void *outer_ssl = inside_ssl; /* a session inside another's call (TLS through a TLS proxy) */
  uint64_t outer_start = inside_start;
  bool outer_unpaired = inside_unpaired;
  inside_ssl = ssl;
  inside_start = start;
  inside_unpaired = connection == NULL;
  errno = saved;
  int result = call(function, which, ssl, buffer, count, done, &moved);
  int error = errno;
  inside_ssl = outer_ssl;
  inside_start = outer_start;
  inside_unpaired = outer_unpaired;

  bool monitor_takes = false, monitor_reads = false;
  int fd = -1;
  if (!elfhook_clients_enter()) {
    /* The monitor took the connections over during the call: it reads the plaintext. */
    monitor_reads = connection && moved > 0;
    if (monitor_reads) fd = connection->core.fd;
  } else if (!(connection = paired(ssl))) {
    /* No socket call in the handshake's call: its ClientHello leaves after it (a memory BIO). */
    if (handshake && unjoined_ssl != ssl) {
      unjoined_ssl = ssl;
      unjoined_start = start;
    }
  } else {
    if (unjoined_ssl == ssl) unjoined_ssl = NULL;
    fd = connection->core.fd;
    if (handshake) {
      if (result == 1) {
        monitor_takes = connection->core.tls_end == 0 && handshake_over(connection, ssl);
      } else if (cnm_openssl.SSL_get_error) {
        int reason = cnm_openssl.SSL_get_error(ssl, result);
        if (reason != SSL_ERROR_WANT_READ && reason != SSL_ERROR_WANT_WRITE) handshake_failed(connection, reason);
      }
    } else if (moved > 0) {
      if (connection->core.tls_end == 0) monitor_takes = handshake_over(connection, ssl);
      if (!monitor_takes && cnm_replay_take_plaintext(&connection->head, received, buffer, moved)) {
        __atomic_add_fetch(received ? &connection->core.tls_bytes_received : &connection->core.tls_bytes_sent,
                           (uint64_t)moved, __ATOMIC_RELAXED);
        if (!received) elfhook_client_name_by_request(connection);
      } else {
        monitor_takes = monitor_reads = true;
      }
    } else if (connection->core.tls_end == 0 && cnm_openssl.SSL_is_init_finished &&
               cnm_openssl.SSL_is_init_finished(ssl) == 1) {
      monitor_takes = handshake_over(connection, ssl);
    }
  }
  elfhook_clients_leave();
  if ((monitor_takes || monitor_reads) && elfhook_monitor_takes(caller) && monitor_reads)
    elfhook_monitor_plaintext(fd, received, buffer, moved);
  errno = error;
  return result;
}
