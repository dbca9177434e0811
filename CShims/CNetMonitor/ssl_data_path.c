/* OpenSSL's data calls on a session whose handshake is over (cnm_tls.h), in C: what nearly
 * every SSL_read and SSL_write of a TLS server or client is. The hook finds the session's
 * connection in the session map before the call; when its plaintext watch is set (Swift sets
 * `plaintext_watch_…` when the handshake ends), it marks the thread as inside the call, calls
 * the original, and hands what moved to the reader the watch names. Anything else — a handshake
 * under way, a session not paired yet, a memory BIO waiting to be joined, a connection of another
 * kind — goes to Swift's hook of the same call, which does all of it as before. A call nested in
 * one of its kind on the session (the library calling its own hooked function) calls through:
 * the outer hook counts; a write inside a read, or a read inside a write, is the application's,
 * from a callback, and is read (cnm_tls.h).
 *
 * errno is the original's: it is put back after the plaintext is read. Nothing here allocates,
 * locks or reads the clock before the call. */
#include "cnetmonitor.h"

#include <errno.h>

static size_t id_offset, tls_bytes_offset;
static cnm_ssl_data_calls slow_paths[2]; /* Swift's hooks: the shared libssl's, the linked copy's */
static cnm_plaintext_callback on_plaintext;

void cnm_set_ssl_data_path(size_t id, size_t tls_bytes, const cnm_ssl_data_calls *shared_slow,
                           const cnm_ssl_data_calls *linked_slow, cnm_plaintext_callback plaintext) {
  id_offset = id;
  tls_bytes_offset = tls_bytes;
  slow_paths[0] = *shared_slow;
  slow_paths[1] = *linked_slow;
  on_plaintext = plaintext;
}

/* The connection of descriptor `fd` when it is still the connection `id`. */
static inline cnm_connection_head *connection(int fd, uint64_t id) {
  if ((unsigned)fd >= __atomic_load_n(&cnm_capacity, __ATOMIC_ACQUIRE) ||
      !__atomic_load_n(&cnm_tracked[fd], __ATOMIC_RELAXED))
    return NULL;
  unsigned char *entry = cnm_states + (size_t)fd * cnm_slot_size;
  return __atomic_load_n((const uint64_t *)(entry + id_offset), __ATOMIC_RELAXED) == id ? (void *)entry : NULL;
}

static inline uint8_t watch(const cnm_connection_head *head, bool received) {
  return __atomic_load_n(received ? &head->plaintext_watch_received : &head->plaintext_watch_sent,
                         __ATOMIC_RELAXED);
}

/* The connection `ssl` is paired with, when the hook reads the call's plaintext itself: its
 * descriptor and id in `fd` and `id`. NULL sends the call to Swift's hook. */
static inline cnm_connection_head *established(void *ssl, bool received, int *fd, uint64_t *id) {
  if (!ssl) return NULL;
  *fd = cnm_ssl_map_get(ssl, id);
  cnm_connection_head *head = connection(*fd, *id);
  return head && watch(head, received) != CNM_PLAINTEXT_SWIFT_HOOK ? head : NULL;
}

/* See cnm_tls.h. A direction whose watch is not set yet is Swift's parser's, which finds out
 * itself what the bytes are. */
void cnm_tls_plaintext(cnm_connection_head *head, bool received, const void *buffer, size_t count) {
  uint64_t *counts = (uint64_t *)((unsigned char *)head + tls_bytes_offset);
  __atomic_fetch_add(&counts[received], (uint64_t)count, __ATOMIC_RELAXED);
  uint8_t reader = watch(head, received);
  if (reader >= CNM_PLAINTEXT_H2_REQUESTS) {
    cnm_h2_read_plaintext(head, reader == CNM_PLAINTEXT_H2_REQUESTS, buffer, count);
  } else if (!cnm_replay_take_plaintext(head, received, buffer, count) && reader != CNM_PLAINTEXT_COUNT) {
    on_plaintext(head, received, buffer, count);
  }
}

/* The thread is inside a call on `ssl` until `leave`: socket I/O the call makes binds the session
 * (Swift's Traffic.bindCurrentSSL), and the library's own hooked calls are nested. */
typedef struct inside {
  void *ssl;
  uint64_t start;
  uint8_t call;
} inside;

static inline inside enter(void *ssl, uint8_t call) {
  inside previous = {cnm_current_ssl, cnm_current_ssl_start, cnm_current_ssl_call};
  cnm_set_current_ssl(ssl, CNM_SSL_START_UNREAD, call);
  return previous;
}

static inline void leave(inside previous) { cnm_set_current_ssl(previous.ssl, previous.start, previous.call); }

/* Inside a call of the same kind on `ssl` (CNM_SSL_CALL_READ or _WRITE: cnm_tls.h). */
static inline bool nested(const void *ssl, uint8_t call) {
  return cnm_current_ssl == ssl && cnm_current_ssl_start != 0 && cnm_current_ssl_call == call;
}

/* `count` plaintext bytes moved on the connection `fd`, `id`: read, if the descriptor still is that
 * connection after the call. */
static inline void moved(int fd, uint64_t id, bool received, const void *buffer, size_t count) {
  cnm_connection_head *head = count > 0 ? connection(fd, id) : NULL;
  if (!head) return;
  int error = errno;
  cnm_tls_plaintext(head, received, buffer, count);
  errno = error;
}

/* The four hooks of one library: `originals` is where the engine keeps the originals (a
 * cnm_original_functions or a cnm_linked_openssl_originals, whose data calls have the same names),
 * `slow` the index of Swift's hooks. */
#define SSL_DATA_HOOKS(prefix, originals, slow)                                                                   \
  static int prefix##_read(void *ssl, void *buffer, int count) {                                                  \
    int fd;                                                                                                       \
    uint64_t id;                                                                                                  \
    if (nested(ssl, CNM_SSL_CALL_READ)) return originals.SSL_read(ssl, buffer, count);                            \
    if (!established(ssl, true, &fd, &id)) return slow_paths[slow].SSL_read(ssl, buffer, count);                  \
    inside previous = enter(ssl, CNM_SSL_CALL_READ);                                                              \
    int result = originals.SSL_read(ssl, buffer, count);                                                          \
    leave(previous);                                                                                              \
    moved(fd, id, true, buffer, result > 0 ? (size_t)result : 0);                                                 \
    return result;                                                                                                \
  }                                                                                                               \
  static int prefix##_read_ex(void *ssl, void *buffer, size_t count, size_t *read) {                              \
    int fd;                                                                                                       \
    uint64_t id;                                                                                                  \
    if (nested(ssl, CNM_SSL_CALL_READ)) return originals.SSL_read_ex(ssl, buffer, count, read);                   \
    if (!established(ssl, true, &fd, &id)) return slow_paths[slow].SSL_read_ex(ssl, buffer, count, read);         \
    inside previous = enter(ssl, CNM_SSL_CALL_READ);                                                              \
    int result = originals.SSL_read_ex(ssl, buffer, count, read);                                                 \
    leave(previous);                                                                                              \
    moved(fd, id, true, buffer, result == 1 && read ? *read : 0);                                                 \
    return result;                                                                                                \
  }                                                                                                               \
  static int prefix##_write(void *ssl, const void *buffer, int count) {                                           \
    int fd;                                                                                                       \
    uint64_t id;                                                                                                  \
    if (nested(ssl, CNM_SSL_CALL_WRITE)) return originals.SSL_write(ssl, buffer, count);                          \
    if (!established(ssl, false, &fd, &id)) return slow_paths[slow].SSL_write(ssl, buffer, count);                \
    inside previous = enter(ssl, CNM_SSL_CALL_WRITE);                                                             \
    int result = originals.SSL_write(ssl, buffer, count);                                                         \
    leave(previous);                                                                                              \
    moved(fd, id, false, buffer, result > 0 ? (size_t)result : 0);                                                \
    return result;                                                                                                \
  }                                                                                                               \
  static int prefix##_write_ex(void *ssl, const void *buffer, size_t count, size_t *written) {                    \
    int fd;                                                                                                       \
    uint64_t id;                                                                                                  \
    if (nested(ssl, CNM_SSL_CALL_WRITE)) return originals.SSL_write_ex(ssl, buffer, count, written);              \
    if (!established(ssl, false, &fd, &id)) return slow_paths[slow].SSL_write_ex(ssl, buffer, count, written);    \
    inside previous = enter(ssl, CNM_SSL_CALL_WRITE);                                                             \
    int result = originals.SSL_write_ex(ssl, buffer, count, written);                                             \
    leave(previous);                                                                                              \
    moved(fd, id, false, buffer, result == 1 && written ? *written : 0);                                          \
    return result;                                                                                                \
  }                                                                                                               \
  static const cnm_ssl_data_calls prefix##_hooks = {prefix##_read, prefix##_read_ex, prefix##_write,              \
                                                     prefix##_write_ex};

SSL_DATA_HOOKS(shared, cnm_originals, 0)
SSL_DATA_HOOKS(linked, cnm_linked_originals, 1)

const cnm_ssl_data_calls *cnm_ssl_data_hooks(bool linked) { return linked ? &linked_hooks : &shared_hooks; }
