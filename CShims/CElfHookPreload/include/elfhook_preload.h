/* elfhook_preload.h — libElfHookPreload.so, what LD_PRELOAD injects: a small C library that starts
 * the monitor when the process first needs it.
 *
 * Loading a Swift runtime (and the C++ runtime it needs) and parsing every loaded image costs a
 * process ~3 ms at start, which most processes of a run — shells, `curl --version`, compilers —
 * never repay. So nothing is started before main: the constructor reads the ELFHOOK_* variables
 * and reports a bad one, and the library exports the calls a network transaction begins with
 * (connect, accept, accept4, getaddrinfo), which the dynamic linker binds to it ahead of libc. The
 * first internet connect or accept (IPv4, IPv6: a unix socket's never makes a record) loads the
 * monitor (libElfHookMonitor.so, beside this library), whose engine rewrites the GOT slots of every
 * image, and then goes through the monitor's hook: from then
 * on the process's calls reach the monitor's hooks through their GOT slots, never through here.
 * Lookups before that are recorded here, in C, without loading the monitor. A process that changes
 * its user id or its root directory (setuid and family, chroot: also exported) starts the monitor
 * just before.
 *
 * An HTTP/1.x client does not load the monitor either (clients.c): its connections and their
 * simple exchanges are recorded here, by the monitor's own C hooks (CNetMonitor's data path and
 * replay), to which this library's exports of the data-path calls (read, write, close and their
 * families) send a tracked connection's calls, and so are its OpenSSL and GnuTLS sessions
 * (tls_clients.c). The first call this cannot record (NSS's, an accept, bytes that are no simple
 * exchange) loads the monitor, which takes these connections over where they are. */
#ifndef ELFHOOK_PRELOAD_H
#define ELFHOOK_PRELOAD_H

#include <limits.h>
#include <stdbool.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>
#include <stddef.h>
#include <stdint.h>

#include "cnetmonitor.h"
#include "cnm_records.h"

/* ---- configuration (configuration.c) ---------------------------------------------------------- */

typedef enum { ELFHOOK_LOG_OFF = 0, ELFHOOK_LOG_ERROR = 1, ELFHOOK_LOG_INFO = 2 } elfhook_log_level;

/* What the ELFHOOK_* variables ask for (ARCHITECTURE.md, "Environment of an injected process"). */
typedef struct elfhook_preload_configuration {
  /* ELFHOOK_OUTPUT: the record ring pattern, "%p" for the pid. A copy: programs that set their
   * process title (nginx) write over the environment's memory after start. */
  char output[PATH_MAX];
  size_t capacity;    /* ELFHOOK_BUFFER_RECORDS: records a ring holds (default 4096) */
  elfhook_log_level log; /* ELFHOOK_LOG: off, error (the default), info */
  /* ELFHOOK_RUN=1, set by `elfhook run`: the output directory is the run's, removed when the run
   * ends. A process still running then (a daemon the command left, which the run stopped waiting
   * for) runs unmonitored without a word: see elfhook_run_is_over. */
  bool run_owned;
  /* ELFHOOK_LIGHT_CLIENTS (1, the default; 0): HTTP/1.x clients recorded here (clients.c). */
  bool light_clients;
} elfhook_preload_configuration;

typedef enum {
  ELFHOOK_CONFIGURED, /* monitor the process */
  ELFHOOK_DISABLED,   /* ELFHOOK_DISABLE=1 */
  ELFHOOK_INVALID,    /* `problem` says which variable is wrong */
} elfhook_configuration_status;

/* Reads the environment. On ELFHOOK_INVALID, `problem` (of `size` bytes) says why, and
 * `configuration->log` holds the level to report it at. A process started after its `elfhook run`
 * ended is ELFHOOK_DISABLED. */
elfhook_configuration_status elfhook_read_configuration(elfhook_preload_configuration *configuration, char *problem,
                                                        size_t size);
/* Whether the output directory belongs to an `elfhook run` that has ended (and removed it). */
bool elfhook_run_is_over(const elfhook_preload_configuration *configuration);
/* Says once per process (a fork child inherits the "said"), when the ring is about to be created,
 * if its directory is not on a memory filesystem
 * (tmpfs, ramfs): a ring on a disk filesystem costs ~2 ms at each process's first record against
 * ~0.1 ms under /dev/shm (BENCHMARKS.md). Silent with ELFHOOK_LOG=off. One statfs(2). */
void elfhook_note_output_filesystem(const elfhook_preload_configuration *configuration);

/* ---- diagnostics (diagnostics.c) -------------------------------------------------------------- */

/* One line on stderr, "elfhook: MESSAGE; NAME[PID] runs unmonitored", in one write(2): nothing of the
 * host's stdio is touched. */
void elfhook_say_unmonitored(const char *format, ...) __attribute__((format(printf, 1, 2)));
/* One line on stderr, "elfhook: MESSAGE". */
void elfhook_say(const char *format, ...) __attribute__((format(printf, 1, 2)));

/* ---- the exported calls (forwarders.c, io_forwarders.c) and the TLS triggers (tls_triggers.c) --- */

/* One exported function: its own address, the definition it forwards to (the next in the lookup
 * order: libc's, or the TLS library's), and the monitor's hook for the name once the monitor runs. */
typedef struct elfhook_forwarder {
  const char *name;
  void *self;
  void *next;
  void *hook;
} elfhook_forwarder;

/* Every name this library forwards (all exported but the TLS ones). The monitor hooks those before
 * ELFHOOK_HOOKED_EXPORTS (it adopts them as its originals' forwarders); the others only start it. */
typedef enum {
  /* where connections begin (forwarders.c) */
  ELFHOOK_CONNECT, ELFHOOK_ACCEPT, ELFHOOK_ACCEPT4, ELFHOOK_GETADDRINFO,
  /* the data path and the calls that end connections (io_forwarders.c) */
  ELFHOOK_READ, ELFHOOK_READV, ELFHOOK_RECV, ELFHOOK_RECVFROM, ELFHOOK_RECVMSG, ELFHOOK_WRITE, ELFHOOK_WRITEV,
  ELFHOOK_SEND, ELFHOOK_SENDTO, ELFHOOK_SENDMSG, ELFHOOK_SENDFILE, ELFHOOK_SENDFILE64, ELFHOOK_CLOSE,
  ELFHOOK_GETSOCKOPT, ELFHOOK_DUP2, ELFHOOK_DUP3, ELFHOOK_CLOSE_RANGE, ELFHOOK_CLOSEFROM,
  /* the TLS libraries' calls the monitor hooks: not exported, triggers in their callers' slots
   * while connections are tracked here (tls_triggers.c) */
  ELFHOOK_SSL_DO_HANDSHAKE, ELFHOOK_SSL_CONNECT, ELFHOOK_SSL_ACCEPT, ELFHOOK_SSL_READ, ELFHOOK_SSL_READ_EX,
  ELFHOOK_SSL_WRITE, ELFHOOK_SSL_WRITE_EX, ELFHOOK_GNUTLS_HANDSHAKE, ELFHOOK_GNUTLS_RECORD_SEND,
  ELFHOOK_GNUTLS_RECORD_SEND2, ELFHOOK_GNUTLS_RECORD_RECV, ELFHOOK_GNUTLS_RECORD_RECV_SEQ,
  ELFHOOK_SSL_FORCE_HANDSHAKE, ELFHOOK_SSL_FORCE_HANDSHAKE_WITH_TIMEOUT, ELFHOOK_PR_READ, ELFHOOK_PR_WRITE,
  ELFHOOK_PR_RECV, ELFHOOK_PR_SEND,
  ELFHOOK_HOOKED_EXPORTS,
  /* the calls before which the monitor starts (forwarders.c) */
  ELFHOOK_SETUID = ELFHOOK_HOOKED_EXPORTS, ELFHOOK_SETEUID, ELFHOOK_SETREUID, ELFHOOK_SETRESUID, ELFHOOK_CHROOT,
  ELFHOOK_EXPORTS
} elfhook_export;

/* The exported functions, under names of their own (each file aliases its libc name to it). */
__typeof(read) elfhook_forward_read;
__typeof(readv) elfhook_forward_readv;
__typeof(recv) elfhook_forward_recv;
__typeof(recvfrom) elfhook_forward_recvfrom;
__typeof(recvmsg) elfhook_forward_recvmsg;
__typeof(write) elfhook_forward_write;
__typeof(writev) elfhook_forward_writev;
__typeof(send) elfhook_forward_send;
__typeof(sendto) elfhook_forward_sendto;
__typeof(sendmsg) elfhook_forward_sendmsg;
__typeof(sendfile) elfhook_forward_sendfile;
__typeof(sendfile64) elfhook_forward_sendfile64;
__typeof(close) elfhook_forward_close;
__typeof(getsockopt) elfhook_forward_getsockopt;
__typeof(dup2) elfhook_forward_dup2;
__typeof(dup3) elfhook_forward_dup3;
int elfhook_forward_close_range(unsigned first, unsigned last, int flags);
void elfhook_forward_closefrom(int lowest);
int elfhook_forward_SSL_do_handshake(void *ssl);
int elfhook_forward_SSL_connect(void *ssl);
int elfhook_forward_SSL_accept(void *ssl);
int elfhook_forward_SSL_read(void *ssl, void *buffer, int count);
int elfhook_forward_SSL_read_ex(void *ssl, void *buffer, size_t count, size_t *read);
int elfhook_forward_SSL_write(void *ssl, const void *buffer, int count);
int elfhook_forward_SSL_write_ex(void *ssl, const void *buffer, size_t count, size_t *written);
int elfhook_forward_gnutls_handshake(void *session);
ssize_t elfhook_forward_gnutls_record_send(void *session, const void *data, size_t size);
ssize_t elfhook_forward_gnutls_record_send2(void *session, const void *data, size_t size, size_t pad,
                                            unsigned flags);
ssize_t elfhook_forward_gnutls_record_recv(void *session, void *data, size_t size);
ssize_t elfhook_forward_gnutls_record_recv_seq(void *session, void *data, size_t size, unsigned char *sequence);
int elfhook_forward_SSL_ForceHandshake(void *fd);
int elfhook_forward_SSL_ForceHandshakeWithTimeout(void *fd, uint32_t timeout);
int32_t elfhook_forward_PR_Read(void *fd, void *buffer, int32_t amount);
int32_t elfhook_forward_PR_Write(void *fd, const void *buffer, int32_t amount);
int32_t elfhook_forward_PR_Recv(void *fd, void *buffer, int32_t amount, int32_t flags, uint32_t timeout);
int32_t elfhook_forward_PR_Send(void *fd, const void *buffer, int32_t amount, int32_t flags, uint32_t timeout);

/* The forwarders, by elfhook_export. */
extern elfhook_forwarder elfhook_forwarders[ELFHOOK_EXPORTS] __attribute__((visibility("hidden")));

/* The definition `which` forwards to, looked up on first use: a process that is not monitored
 * (ELFHOOK_DISABLE=1, a bad variable) still calls through here, as may a constructor that runs
 * before this library's. NULL when there is none (a TLS library's name in a process without it). */
void *elfhook_next_slow(elfhook_export which);
static inline void *elfhook_next(elfhook_export which) {
  void *next = __atomic_load_n(&elfhook_forwarders[which].next, __ATOMIC_ACQUIRE);
  return __builtin_expect(next != NULL, 1) ? next : elfhook_next_slow(which);
}

/* Arms the forwarders: the first call through one of them starts the monitor. */
void elfhook_arm(const elfhook_preload_configuration *configuration);

/* Whether the monitor is armed (configured, not started): clients.c may track a connection. */
bool elfhook_monitor_armed(void);

/* Where a call of `which` made from `caller` (its return address) goes when the monitor must see
 * it: the monitor's hook, the monitor started first (or waited for); libc's function when the
 * process runs unmonitored, when the monitor was already running (a pointer taken with dlsym), or
 * when the call is the monitor's own, from a hook whose original is still this forwarder while the
 * monitor starts. errno is kept. */
void *elfhook_route(elfhook_export which, const void *caller);

/* Whether the monitor takes a call made from `caller` now: started first, or waited for; false
 * when the process runs unmonitored, or for the monitor's own call (elfhook_route). errno is kept. */
bool elfhook_monitor_takes(const void *caller);

/* ---- name lookups before the monitor is loaded (lookups.c) ---------------------------------------- */

/* Records a getaddrinfo call into the process's ring (created at the first one), and remembers
 * its answers (cnm_resolutions) for the connections that follow. */
void elfhook_record_lookup(const elfhook_preload_configuration *configuration, const char *host, int status,
                           int system_errno, const struct addrinfo *answers, uint64_t start_unix_ns,
                           uint64_t duration_ns);
/* The process's ring, created on first use; NULL when it cannot be (said once). */
cnm_queue *elfhook_ring(const elfhook_preload_configuration *configuration);
/* Whether the ring could not be created (and that was said): the monitor would fail the same way. */
bool elfhook_ring_failed(void);
/* Fills `handoff`'s ring (or NULL: nothing made one) and its name resolutions. */
void elfhook_lookups_handoff(cnm_handoff *handoff);
/* The monitor took the ring: from now on it is the monitor's. */
void elfhook_lookups_handed_over(void);
/* In a fork child: the parent's ring is not the child's; the child creates its own when it needs one. */
void elfhook_lookups_after_fork_in_child(void);

/* ---- clients recorded before the monitor is loaded (clients.c, tls_clients.c) ---------------------- */

/* Whether `fd` is a connection tracked here: the test every exported data-path call makes. */
static inline bool elfhook_client_tracked(int fd) {
  return __builtin_expect((unsigned)fd < __atomic_load_n(&cnm_capacity, __ATOMIC_RELAXED), 0) && cnm_tracked[fd];
}
/* connect, while the monitor is armed: calls it, tracks the connection here and returns true with
 * connect's result in `result` (errno connect's); or returns false without calling it when this
 * library cannot track it (the caller then loads the monitor). */
bool elfhook_client_connect(const elfhook_preload_configuration *configuration, int fd,
                            const struct sockaddr *address, socklen_t length, int *result);
/* After a data-path call on the tracked connection `fd` moved `result` bytes (any result: only
 * those > 0 are bytes): counts them, takes them as part of a simple exchange, or loads the monitor
 * and hands the call to it. */
void elfhook_client_moved(int fd, bool received, const void *buffer, const struct iovec *vector, int vector_count,
                          ssize_t result, const void *caller);
/* getsockopt(SO_ERROR) answered `error` for the tracked connection `fd`. */
void elfhook_client_asked_error(int fd, int error);
/* The tracked connection `fd` is about to be closed (close, dup2, close_range…): records it.
 * False when the monitor must close it (it has an exchange under way): the caller then calls the
 * monitor's hook. */
bool elfhook_client_closing(int fd);
/* Puts a trigger for every TLS name into the slots of the images that call it (the ones loaded
 * now): false when the engine fails. */
bool elfhook_tls_triggers_set(void);
/* Whether any connection is tracked here: a TLS library's call then goes to tls_clients.c
 * (OpenSSL's and GnuTLS's) or loads the monitor first (NSS's). */
bool elfhook_clients_live(void);
/* A call of OpenSSL's or GnuTLS's that tls_clients.c records: `which` (SSL_connect,
 * SSL_do_handshake, SSL_accept, SSL_read, SSL_write and their _ex forms; gnutls_handshake,
 * gnutls_record_send, _send2, _recv and _recv_seq) on `session`, with its arguments. */
typedef struct elfhook_tls_call {
  elfhook_export which;
  void *session;
  void *buffer;
  size_t count;            /* SSL_read's and SSL_write's int count as a size_t: the same int comes back */
  size_t *done;            /* SSL_read_ex, SSL_write_ex: the bytes moved */
  size_t pad;              /* gnutls_record_send2 */
  unsigned flags;          /* gnutls_record_send2 */
  unsigned char *sequence; /* gnutls_record_recv_seq */
} elfhook_tls_call;
/* `call`, while connections are tracked here: recorded here when its session is over one of them,
 * else through the monitor (tls_clients.c). Returns the call's result, errno its own. */
ssize_t elfhook_tls_client_call(const elfhook_tls_call *call, const void *caller);
/* Before the monitor starts: waits for the calls under way here, stops every connection's replay,
 * and fills `handoff`'s clients. */
void elfhook_clients_handoff(cnm_handoff *handoff);
/* After: the monitor runs (`running`) and has the connections, or failed and they are forgotten. */
void elfhook_clients_handed_over(bool running);
/* In a fork child: the parent's connections are not recorded by the child. */
void elfhook_clients_after_fork_in_child(void);

/* ---- the monitor (monitor_loading.c) ------------------------------------------------------------ */

/* Remembers where the monitor library is: beside this one. Returns false (and says why, at `log`)
 * when this library's own path cannot be found. Called by the constructor, before the working directory can
 * change. */
bool elfhook_locate_monitor(elfhook_log_level log);

/* Loads libElfHookMonitor.so, starts it recording as `configuration` says, and fills each
 * forwarder's hook. Returns false, having said why at `configuration->log`, when the process must
 * run unmonitored. */
bool elfhook_load_monitor(const elfhook_preload_configuration *configuration, elfhook_forwarder *forwarders,
                          size_t count);
/* Hands `call`'s bytes (its moved_at set: when they moved) to the monitor, loading it first or
 * waiting for the thread that is (elfhook_monitor_takes, for `caller`); nothing when the process
 * runs unmonitored. A call that loads the monitor is the first it reads (cnm_handoff's `call`). */
void elfhook_hand_to_monitor(const cnm_handed_call *call, const void *caller);
/* After the monitor is loaded: hands it a connection made while it took the others over. */
void elfhook_monitor_take_client(const cnm_connection_head *head, const void *core);

/* Whether `return_address` is in the monitor library: a call from the monitor's hook to its original,
 * which is still the forwarder while the monitor starts (the hooks are in place before
 * elfhook_monitor_adopt makes their originals libc's). */
bool elfhook_called_from_monitor(const void *return_address);

/* The monitor's entry points (Sources/ElfHookMonitor/MonitorEntry.swift). */
typedef int (*elfhook_monitor_start_function)(const cnm_handoff *handoff);
typedef void *(*elfhook_monitor_adopt_function)(const char *name, void *forwarder, void *next);
typedef void (*elfhook_monitor_take_call_function)(const cnm_handed_call *call);
typedef void (*elfhook_monitor_take_client_function)(const cnm_connection_head *head, const void *core);

#endif
