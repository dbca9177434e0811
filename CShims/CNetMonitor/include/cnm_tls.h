/* cnm_tls.h — what the TLS hooks share (part of cnetmonitor.h, which includes it last): which
 * socket an SSL object uses, the sessions whose ciphertext moves outside their calls, and
 * OpenSSL's data calls in C with the one reader of every TLS library's plaintext. */
#ifndef CNM_TLS_H
#define CNM_TLS_H

#include "cnetmonitor.h"

/* ---- which socket an SSL object uses -------------------------------------------------------------
 * SSL_get_fd answers only for socket BIOs; libcurl, nginx's and python's own BIOs make it -1. So the
 * TLS hooks mark the calling thread as "inside an SSL call on `ssl`", and the first tracked socket
 * that moves bytes on that thread during the call is the SSL object's transport: the pair goes in
 * a small lock-free map for the calls that follow. The hooks look there first: the pairs that
 * SSL_get_fd or gnutls_transport_get_int gave go there too (a map probe is cheaper than
 * SSL_get_fd's walk of the BIO chain). A GnuTLS session is keyed the same way. */

extern __thread void *cnm_current_ssl __attribute__((tls_model("initial-exec")));
extern __thread uint64_t cnm_current_ssl_start __attribute__((tls_model("initial-exec")));
extern __thread uint8_t cnm_current_ssl_call __attribute__((tls_model("initial-exec")));
static inline void *cnm_get_current_ssl(void) { return cnm_current_ssl; }
static inline uint64_t cnm_get_current_ssl_start(void) { return cnm_current_ssl_start; }
static inline uint8_t cnm_get_current_ssl_call(void) { return cnm_current_ssl_call; }
static inline void cnm_set_current_ssl(void *ssl, uint64_t start, uint8_t call) {
  cnm_current_ssl = ssl;
  cnm_current_ssl_start = start;
  cnm_current_ssl_call = call;
}

/* The kind of the hooked call on cnm_current_ssl the thread is inside. A call of the same kind on
 * the same session inside it is the library's own (SSL_connect calling SSL_do_handshake) and only
 * calls through; one of another kind is the application's, made from a callback of the outer
 * call, and is read like any other (Node writes a request from inside the SSL_read that ends
 * its handshake). */
#define CNM_SSL_CALL_HANDSHAKE 0
#define CNM_SSL_CALL_READ 1
#define CNM_SSL_CALL_WRITE 2

/* Remembers that `ssl` runs over `fd`, the connection `id` (its ConnectionCore id). */
void cnm_ssl_map_put(const void *ssl, int fd, uint64_t id);
/* The descriptor `ssl` was seen on, or -1; `*id` gets its connection's id. An SSL object freed
 * and another made at its address, or the descriptor reused, leave a stale pair: callers check
 * that the descriptor's connection still has the id. */
int cnm_ssl_map_get(const void *ssl, uint64_t *id);

/* ---- SSL objects whose ciphertext moves outside their calls (memory BIOs) -----------------------
 * Node's TLS writes an SSL object's ciphertext into memory and moves it on the socket itself, on the
 * same thread, just after the SSL call (a client's ClientHello), or just before it (a server reads
 * the ClientHello, then calls SSL_read). So a thread remembers the last SSL object its calls could
 * not place, and the last connection whose first bytes it saw carry a ClientHello: whichever comes
 * second joins them (TLSJoin.swift). */
extern __thread void *cnm_unjoined_ssl __attribute__((tls_model("initial-exec")));
extern __thread uint64_t cnm_unjoined_ssl_start __attribute__((tls_model("initial-exec")));
extern __thread int cnm_hello_fd __attribute__((tls_model("initial-exec"))); /* fd + 1; 0: none */
extern __thread uint64_t cnm_hello_id __attribute__((tls_model("initial-exec")));
static inline void *cnm_get_unjoined_ssl(void) { return cnm_unjoined_ssl; }
static inline uint64_t cnm_get_unjoined_ssl_start(void) { return cnm_unjoined_ssl_start; }
static inline void cnm_set_unjoined_ssl(void *ssl, uint64_t start) {
  cnm_unjoined_ssl = ssl;
  cnm_unjoined_ssl_start = start;
}
/* The connection (descriptor, id) whose first bytes in, a ClientHello, this thread read last. */
static inline int cnm_get_hello_fd(uint64_t *id) {
  *id = cnm_hello_id;
  return cnm_hello_fd - 1;
}
static inline void cnm_set_hello_fd(int fd, uint64_t id) {
  cnm_hello_fd = fd + 1;
  cnm_hello_id = id;
}
/* Forgets every pair (a fork child's connections are its own). */
void cnm_ssl_map_clear(void);

/* ---- OpenSSL's data calls on a session whose handshake is over (ssl_data_path.c) ----------------
 * SSL_read, SSL_write and their _ex forms, of the shared libssl (GOT hooks) and of a copy linked
 * into the executable (inline hooks). When the session map pairs the SSL object with a tracked
 * connection whose plaintext watch is set (CNM_PLAINTEXT_…: once the handshake is over), the hook
 * calls the original, counts the plaintext and hands it to the HTTP/2 reader, the replay or
 * Swift's parser; every other call (a handshake under way, a session not yet paired) goes to
 * Swift's hook of the same call, the slow path, whole. */
typedef struct cnm_ssl_data_calls {
  int (*SSL_read)(void *, void *, int);
  int (*SSL_read_ex)(void *, void *, size_t, size_t *);
  int (*SSL_write)(void *, const void *, int);
  int (*SSL_write_ex)(void *, const void *, size_t, size_t *);
} cnm_ssl_data_calls;
/* Plaintext (`count` bytes > 0) of a direction whose watch is CNM_PLAINTEXT_PARSE that the replay
 * did not take: Swift's parser reads it. */
typedef void (*cnm_plaintext_callback)(void *slot, bool received, const void *buffer, size_t count);
/* Set once, before the hooks are installed: where a connection's entry keeps its id and its TLS
 * plaintext counts (sent, then received: two 64-bit words), Swift's hooks of both libraries, and
 * the parser's callback. */
void cnm_set_ssl_data_path(size_t id_offset, size_t tls_bytes_offset, const cnm_ssl_data_calls *shared_slow,
                           const cnm_ssl_data_calls *linked_slow, cnm_plaintext_callback plaintext);
/* The hooks: the shared libssl's (`linked` false) or the linked copy's. */
const cnm_ssl_data_calls *cnm_ssl_data_hooks(bool linked);
/* `count` plaintext bytes (> 0) in `buffer` that the connection `head` received or sent through its
 * TLS library, from any TLS hook: counted, then read as the direction's plaintext watch says (by
 * the HTTP/2 reader; by the replay, then Swift's parser; or by the replay only). Leaves errno to
 * the caller. */
void cnm_tls_plaintext(cnm_connection_head *head, bool received, const void *buffer, size_t count);
/* cnm_current_ssl_start inside a call whose start the hook did not read (ssl_data_path.c): a
 * socket it binds to the session takes the time then. */
#define CNM_SSL_START_UNREAD 1

#endif
