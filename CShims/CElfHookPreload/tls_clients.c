/* TLS sessions over the connections clients.c tracks, recorded by the injected library too
 * (elfhook_preload.h): OpenSSL's and GnuTLS's.
 *
 * A `curl https://…` that loaded the monitor at its first TLS call paid ~1.5 ms more than the same
 * `curl` over plaintext (BENCHMARKS.md). So while connections are tracked here, the triggers of
 * OpenSSL's and GnuTLS's handshake, read and write (tls_triggers.c) come here first, and a session
 * over one of those connections is recorded as the monitor's TLS hooks record it
 * (OpenSSLHooks.swift, GnuTLSHooks.swift):
 *
 * - Pairing: a session is paired with its connection by the socket calls of its first handshake
 *   call (libcurl gives OpenSSL a BIO of its own, so SSL_get_fd knows no descriptor), else by the
 *   descriptor the library names (SSL_get_fd, gnutls_transport_get_int), else, for a session whose
 *   ciphertext moves outside its calls (a memory BIO: python's asyncio), by the ClientHello its
 *   thread sends next (the monitor's TLSJoin). From then on the connection's socket bytes are
 *   ciphertext, only counted.
 * - The handshake: its first call starts the clock; the call after which it is over gives its end,
 *   version, ALPN protocol and (OpenSSL's) server name, and the replay's template is made again
 *   with them. A handshake that fails for good is the connection's error (SSL_do_handshake and
 *   SSL_get_error's code, gnutls_handshake and its result), as the monitor records it.
 * - Plaintext: counted, and taken by the replay while it is part of a simple exchange
 *   (cnm_replay_take_plaintext), or, when ALPN chose h2, by the HTTP/2 reader (h2_clients.c).
 *
 * What the replay or the HTTP/2 reader refuses, and a protocol ALPN chose other than HTTP/1.1 and
 * h2, load the monitor, which takes the connections over with their sessions' pairings and HTTP/2
 * readers (cnm_handoff), and is handed the call's plaintext, as of when it moved
 * (elfhook_hand_to_monitor). A session
 * this cannot pair before it moves plaintext, SSL_accept, and NSS's calls go through the monitor,
 * loaded first, as before. Nothing here allocates on a call's way but the TLS library's functions'
 * look-up at its first (dlopen of the loaded library, as the monitor's hooks do) and the HTTP/2
 * pool's mapping at the first HTTP/2 session; errno is the call's. */
#include "client_entry.h"
#include "elfhook_preload.h"

#include <errno.h>
#include <string.h>

enum { SSL_ERROR_WANT_READ = 2, SSL_ERROR_WANT_WRITE = 3, TLSEXT_NAMETYPE_HOST_NAME = 0 };
enum { GNUTLS_E_AGAIN = -28, GNUTLS_E_INTERRUPTED = -52, GNUTLS_E_INTERNAL_ERROR = -59 };
enum { HOOKED_CALL_SSL_HANDSHAKE = 2, HOOKED_CALL_GNUTLS_HANDSHAKE = 3 }; /* HookedCall's */

/* The TLS library's call this thread is inside (the outermost), when it began, and whether its
 * session was unpaired when it began: then its socket calls pair it. */
static __thread void *inside_session __attribute__((tls_model("initial-exec")));
static __thread uint64_t inside_start __attribute__((tls_model("initial-exec")));
static __thread bool inside_unpaired __attribute__((tls_model("initial-exec")));
/* The last session whose handshake call this thread made without moving a byte on a socket, and
 * when that call began: its ClientHello is the next TLS record the thread sends on a connection. */
static __thread void *unjoined_session __attribute__((tls_model("initial-exec")));
static __thread uint64_t unjoined_start __attribute__((tls_model("initial-exec")));

enum { TLS_HANDSHAKE_RECORD = 0x16 }; /* a TLS record's first byte: its content type */

static bool is_gnutls(elfhook_export which) {
  return which >= ELFHOOK_GNUTLS_HANDSHAKE && which <= ELFHOOK_GNUTLS_RECORD_RECV_SEQ;
}

static bool is_handshake(elfhook_export which) {
  return which == ELFHOOK_SSL_CONNECT || which == ELFHOOK_SSL_DO_HANDSHAKE || which == ELFHOOK_SSL_ACCEPT ||
         which == ELFHOOK_GNUTLS_HANDSHAKE;
}

static bool is_read(elfhook_export which) {
  return which == ELFHOOK_SSL_READ || which == ELFHOOK_SSL_READ_EX || which == ELFHOOK_GNUTLS_RECORD_RECV ||
         which == ELFHOOK_GNUTLS_RECORD_RECV_SEQ;
}

/* What a call of `which` returns when it could not be made. */
static ssize_t failure(elfhook_export which) {
  if (is_gnutls(which)) return GNUTLS_E_INTERNAL_ERROR;
  return which == ELFHOOK_SSL_READ_EX || which == ELFHOOK_SSL_WRITE_EX ? 0 : -1;
}

/* Makes `call` through `function`, and sets `moved` to the plaintext bytes it moved. */
static ssize_t make(void *function, const elfhook_tls_call *call, size_t *moved) {
  ssize_t result;
  *moved = 0;
  switch (call->which) {
  case ELFHOOK_SSL_READ:
  case ELFHOOK_SSL_WRITE:
    result = ((int (*)(void *, void *, int))function)(call->session, call->buffer, (int)call->count);
    break;
  case ELFHOOK_SSL_READ_EX:
  case ELFHOOK_SSL_WRITE_EX:
    result = ((int (*)(void *, void *, size_t, size_t *))function)(call->session, call->buffer, call->count, call->done);
    if (result == 1 && call->done) *moved = *call->done;
    return result;
  case ELFHOOK_GNUTLS_RECORD_SEND:
  case ELFHOOK_GNUTLS_RECORD_RECV:
    result = ((ssize_t (*)(void *, void *, size_t))function)(call->session, call->buffer, call->count);
    break;
  case ELFHOOK_GNUTLS_RECORD_SEND2:
    result = ((ssize_t (*)(void *, void *, size_t, size_t, unsigned))function)(call->session, call->buffer, call->count,
                                                                               call->pad, call->flags);
    break;
  case ELFHOOK_GNUTLS_RECORD_RECV_SEQ:
    result = ((ssize_t (*)(void *, void *, size_t, unsigned char *))function)(call->session, call->buffer, call->count,
                                                                              call->sequence);
    break;
  default: /* a handshake */
    return ((int (*)(void *))function)(call->session);
  }
  if (result > 0) *moved = (size_t)result;
  return result;
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
    connection->ssl = inside_session;
    inside_unpaired = false;
    mark_tls(connection, inside_start);
    return;
  }
  if (!unjoined_session || received || inside_session || connection->head.bytes_sent || connection->head.bytes_received) return;
  const unsigned char *first = buffer ? buffer : vector_count > 0 && vector[0].iov_len ? vector[0].iov_base : NULL;
  if (!first || first[0] != TLS_HANDSHAKE_RECORD) return;
  connection->ssl = unjoined_session;
  mark_tls(connection, unjoined_start);
  unjoined_session = NULL;
}

/* The descriptor the TLS library says `session` runs over; -1 when it knows none. */
static int descriptor_of(void *session, bool gnutls) {
  if (gnutls) return cnm_gnutls.transport_get_int ? cnm_gnutls.transport_get_int(session) : -1;
  return cnm_openssl.SSL_get_fd ? cnm_openssl.SSL_get_fd(session) : -1;
}

/* The connection `session` is paired with; or, when it has no pairing yet, the tracked connection
 * its library names, paired now. NULL when neither. */
static elfhook_client *paired(void *session, bool gnutls) {
  uint32_t end = elfhook_clients_end();
  for (uint32_t fd = 0; fd < end; fd++) {
    if (cnm_tracked[fd] && elfhook_client_entry((int)fd)->ssl == session) return elfhook_client_entry((int)fd);
  }
  int fd = descriptor_of(session, gnutls);
  if (!elfhook_client_tracked(fd)) return NULL;
  elfhook_client *connection = elfhook_client_entry(fd);
  connection->ssl = session;
  return connection;
}

/* The version GnuTLS negotiated, named as OpenSSL names it (gnutls_protocol_t's stable values), as
 * the monitor names it (GnuTLSHooks.swift). */
static const char *gnutls_version_name(void *session) {
  if (!cnm_gnutls.protocol_get_version) return NULL;
  int version = cnm_gnutls.protocol_get_version(session);
  switch (version) {
  case 1: return "SSLv3";
  case 2: return "TLSv1";
  case 3: return "TLSv1.1";
  case 4: return "TLSv1.2";
  case 5: return "TLSv1.3";
  case 201: return "DTLSv1";
  case 202: return "DTLSv1.2";
  default: return cnm_gnutls.protocol_get_name ? cnm_gnutls.protocol_get_name(version) : NULL;
  }
}

/* The protocol ALPN chose (not NUL-terminated), or NULL with `length` 0. */
static const unsigned char *negotiated_protocol(void *session, bool gnutls, size_t *length) {
  *length = 0;
  if (gnutls) {
    cnm_gnutls_datum datum = {NULL, 0};
    if (!cnm_gnutls.alpn_get_selected_protocol || cnm_gnutls.alpn_get_selected_protocol(session, &datum) != 0)
      return NULL;
    *length = datum.data ? datum.size : 0;
    return datum.data;
  }
  const unsigned char *protocol = NULL;
  unsigned int protocol_length = 0;
  if (cnm_openssl.SSL_get0_alpn_selected) cnm_openssl.SSL_get0_alpn_selected(session, &protocol, &protocol_length);
  *length = protocol ? protocol_length : 0;
  return protocol;
}

static bool is_protocol(const unsigned char *protocol, size_t length, const char *name) {
  return length == strlen(name) && memcmp(protocol, name, length) == 0;
}

/* Whether ALPN chose HTTP/2 for the session over `connection` (h2_clients.c reads it). */
static bool speaks_h2(const elfhook_client *connection) {
  return is_protocol(connection->core.tls_alpn.bytes, (size_t)connection->core.tls_alpn.count, "h2");
}

/* The handshake is over: its end, version, ALPN protocol and server name (OpenSSL's: the host, when
 * no lookup named it), and the replay's template made with them. True when ALPN chose a protocol
 * neither the replay nor h2_clients.c reads: the monitor takes the connection. */
static bool handshake_over(elfhook_client *connection, void *session, bool gnutls) {
  cnm_connection_core *core = &connection->core;
  core->tls_end = cnm_monotonic_ns();
  const char *version = gnutls                       ? gnutls_version_name(session)
                        : cnm_openssl.SSL_get_version ? cnm_openssl.SSL_get_version(session)
                                                      : NULL;
  if (version) ELFHOOK_SET_TEXT(core->tls_version, version, strlen(version));
  size_t protocol_length;
  const unsigned char *protocol = negotiated_protocol(session, gnutls, &protocol_length);
  if (protocol_length) ELFHOOK_SET_TEXT(core->tls_alpn, protocol, protocol_length);
  if (!gnutls && core->host.count == 0 && cnm_openssl.SSL_get_servername) {
    const char *name = cnm_openssl.SSL_get_servername(session, TLSEXT_NAMETYPE_HOST_NAME);
    if (name) ELFHOOK_SET_TEXT(core->host, name, strlen(name));
  }
  /* Before any exchange (no plaintext moves before the handshake is over). */
  if (__atomic_load_n(&connection->head.replay_state, __ATOMIC_ACQUIRE) == CNM_REPLAY_ARMED)
    elfhook_client_rearm(connection);
  return protocol_length != 0 && !is_protocol(protocol, protocol_length, "http/1.1") && !speaks_h2(connection);
}

/* A handshake call's `result`: whether the handshake is over. */
static bool handshake_succeeded(ssize_t result, bool gnutls) { return result == (gnutls ? 0 : 1); }

/* The error code of a handshake call that failed for good with `result`; 0 when it is to be called
 * again (or did not fail). */
static int handshake_error(void *session, ssize_t result, bool gnutls) {
  if (handshake_succeeded(result, gnutls)) return 0;
  if (gnutls) {
    bool again = result == GNUTLS_E_AGAIN || result == GNUTLS_E_INTERRUPTED ||
                 !cnm_gnutls.error_is_fatal || cnm_gnutls.error_is_fatal((int)result) == 0;
    return again ? 0 : (int)result;
  }
  if (!cnm_openssl.SSL_get_error) return 0;
  int reason = cnm_openssl.SSL_get_error(session, (int)result);
  return reason == SSL_ERROR_WANT_READ || reason == SSL_ERROR_WANT_WRITE ? 0 : reason;
}

static void handshake_failed(elfhook_client *connection, int code, bool gnutls) {
  cnm_connection_core *core = &connection->core;
  core->tls_end = cnm_monotonic_ns();
  core->phase = CNM_PHASE_FAILED;
  if (!core->error_call) {
    core->error_call = gnutls ? HOOKED_CALL_GNUTLS_HANDSHAKE : HOOKED_CALL_SSL_HANDSHAKE;
    core->error_code = code;
  }
}

/* The call as the monitor makes it: loaded first (or the process runs unmonitored: the function
 * the slot held). */
static ssize_t through_monitor(const elfhook_tls_call *call, const void *caller) {
  size_t moved;
  void *function = elfhook_route(call->which, caller);
  if (!function) {
    errno = ENOSYS;
    return failure(call->which);
  }
  return make(function, call, &moved);
}

ssize_t elfhook_tls_client_call(const elfhook_tls_call *call, const void *caller) {
  void *function = elfhook_next(call->which), *session = call->session;
  size_t moved;
  /* The library calling its own hooked function: the outermost call counts. */
  if (function && session && inside_session == session) return make(function, call, &moved);
  if (!function || !session || call->which == ELFHOOK_SSL_ACCEPT) return through_monitor(call, caller);

  bool gnutls = is_gnutls(call->which), handshake = is_handshake(call->which), received = is_read(call->which);
  int saved = errno;
  /* Once: the rest of the library's functions, from the same library. */
  if (gnutls) cnm_resolve_gnutls(function);
  else cnm_resolve_openssl(function);
  uint64_t start = cnm_monotonic_ns();
  bool open = elfhook_clients_enter();
  elfhook_client *connection = open ? paired(session, gnutls) : NULL;
  if (connection) mark_tls(connection, start);
  elfhook_clients_leave();
  /* Plaintext that no connection here can be given to: the monitor pairs it (TLSJoin). */
  if (!open || (!connection && !handshake)) {
    errno = saved;
    return through_monitor(call, caller);
  }

  void *outer_session = inside_session; /* a session inside another's call (TLS through a TLS proxy) */
  uint64_t outer_start = inside_start;
  bool outer_unpaired = inside_unpaired;
  inside_session = session;
  inside_start = start;
  inside_unpaired = connection == NULL;
  errno = saved;
  ssize_t result = make(function, call, &moved);
  int error = errno;
  inside_session = outer_session;
  inside_start = outer_start;
  inside_unpaired = outer_unpaired;

  bool monitor_takes = false, monitor_reads = false;
  int fd = -1;
  if (!elfhook_clients_enter()) {
    /* The monitor took the connections over during the call: it reads the plaintext. */
    monitor_reads = connection && moved > 0;
    if (monitor_reads) fd = connection->core.fd;
  } else if (!(connection = paired(session, gnutls))) {
    /* No socket call in the handshake's call: its ClientHello leaves after it (a memory BIO). */
    if (handshake && unjoined_session != session) {
      unjoined_session = session;
      unjoined_start = start;
    }
  } else {
    if (unjoined_session == session) unjoined_session = NULL;
    fd = connection->core.fd;
    bool over = connection->core.tls_end != 0;
    if (handshake) {
      int code = handshake_error(session, result, gnutls);
      if (code) handshake_failed(connection, code, gnutls);
      else if (!over && handshake_succeeded(result, gnutls)) monitor_takes = handshake_over(connection, session, gnutls);
    } else if (moved > 0) {
      if (!over) monitor_takes = handshake_over(connection, session, gnutls);
      bool taken = !monitor_takes && (speaks_h2(connection)
                                          ? elfhook_h2_client_plaintext(connection, received, call->buffer, moved)
                                          : cnm_replay_take_plaintext(&connection->head, received, call->buffer, moved));
      if (taken) {
        __atomic_add_fetch(received ? &connection->core.tls_bytes_received : &connection->core.tls_bytes_sent,
                           (uint64_t)moved, __ATOMIC_RELAXED);
        if (!received) elfhook_client_name_by_request(connection);
      } else {
        monitor_takes = monitor_reads = true;
      }
    } else if (!over && !gnutls && cnm_openssl.SSL_is_init_finished &&
               cnm_openssl.SSL_is_init_finished(session) == 1) {
      monitor_takes = handshake_over(connection, session, gnutls);
    }
  }
  elfhook_clients_leave();
  if (monitor_reads) {
    cnm_handed_call handed = {fd, received, true, call->buffer, NULL, 0, (ssize_t)moved, cnm_monotonic_ns()};
    elfhook_hand_to_monitor(&handed, caller);
  } else if (monitor_takes) {
    elfhook_monitor_takes(caller);
  }
  errno = error;
  return result;
}
