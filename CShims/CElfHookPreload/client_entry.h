/* client_entry.h — what clients.c (a tracked connection's life) shares with tls_clients.c (a TLS
 * session over one): the entry of a tracked connection, and the rule for touching it. */
#ifndef ELFHOOK_CLIENT_ENTRY_H
#define ELFHOOK_CLIENT_ENTRY_H

#include "cnetmonitor.h"
#include "cnm_record_layout.h"

#include <stdbool.h>
#include <string.h>

/* An entry of this library's copy of CNetMonitor's table. */
typedef struct elfhook_client {
  cnm_connection_head head; /* first: the data path finds it at the entry's address */
  cnm_connection_core core;
  void *ssl; /* the TLS session (an SSL *, a gnutls_session_t) over it (tls_clients.c); NULL until paired */
  cnm_client_h2 h2; /* its HTTP/2 state, once its plaintext (a TLS session's or not) is HTTP/2: h2_clients.c */
} elfhook_client;

static inline elfhook_client *elfhook_client_entry(int fd) { return (elfhook_client *)cnm_slot(fd); }

/* Sets a core's FixedText `field` (a host, a TLS version…) to `length` bytes of `text` (not
 * NUL-terminated), as many as it holds. */
#define ELFHOOK_SET_TEXT(field, text, length)                                          \
  do {                                                                                 \
    size_t kept_ = (length) < sizeof(field).bytes ? (length) : sizeof(field).bytes;    \
    memcpy((field).bytes, (text), kept_);                                              \
    (field).count = (int64_t)kept_;                                                    \
  } while (0)

/* Entries are read and written only between elfhook_clients_enter and elfhook_clients_leave (a call
 * is accounted for there, after its original returned), and only when enter returned true: false
 * means the monitor is taking the connections over, and every entry is its. */
bool elfhook_clients_enter(void) __attribute__((visibility("hidden")));
void elfhook_clients_leave(void) __attribute__((visibility("hidden")));
/* Every tracked descriptor is below this. */
uint32_t elfhook_clients_end(void) __attribute__((visibility("hidden")));

/* Makes the replay's template again from the connection as it is now (its TLS handshake over),
 * before its first exchange. */
void elfhook_client_rearm(elfhook_client *connection) __attribute__((visibility("hidden")));
/* After a sent call the replay took: a client connection that no lookup or server name named takes
 * the name its first request's Host gives. */
void elfhook_client_name_by_request(elfhook_client *connection) __attribute__((visibility("hidden")));

/* For clients.c, before a socket call on `connection` that moved bytes (`received`, in `buffer` or
 * `vector`) is accounted for: it pairs the connection with the TLS session whose ciphertext
 * these bytes are, if it is one that no connection is paired with yet (tls_clients.c). */
void elfhook_tls_client_socket_call(elfhook_client *connection, bool received, const void *buffer,
                                    const struct iovec *vector, int vector_count) __attribute__((visibility("hidden")));

/* Plaintext of the TLS session over `connection`, whose ALPN chose h2 (h2_clients.c): read as
 * HTTP/2, the streams that end recorded. False, nothing read, when the monitor is to read it: a
 * fork child's inherited connection, plaintext before the client's preface, a first request that
 * is not HTTP/2, a server's first bytes that are not its preface, no state left in the pool. */
bool elfhook_h2_client_plaintext(elfhook_client *connection, bool received, const void *buffer,
                                 size_t count) __attribute__((visibility("hidden")));
/* The socket bytes of a plaintext `connection` (`count` of them, in `buffer` or `vector`) when it
 * speaks HTTP/2 with prior knowledge: counted and read, the streams that end recorded (h2_clients.c).
 * False, nothing done, when they are not HTTP/2 it reads: the replay's, or the monitor's. */
bool elfhook_h2_client_socket_bytes(elfhook_client *connection, bool received, const void *buffer,
                                    const struct iovec *vector, int vector_count, size_t count)
    __attribute__((visibility("hidden")));
/* The connection closes: its streams still open are recorded, as not complete, and its state goes
 * back to the pool. Returns its streams: recorded, or lost past the streams it could follow in flight. */
uint64_t elfhook_h2_client_finish(elfhook_client *connection) __attribute__((visibility("hidden")));

#endif
