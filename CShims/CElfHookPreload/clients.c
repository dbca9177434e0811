/* HTTP/1.x clients, recorded by the injected library itself (elfhook_preload.h); their TLS
 * sessions in tls_clients.c.
 *
 * Loading the monitor costs a short-lived process ~1.5 ms (mapping, relocating and starting a
 * Swift library of ~7 MB: BENCHMARKS.md), more than a `curl` of a small file takes. So while the
 * monitor is armed, an internet TCP connect is tracked here, in this library's copy of
 * CNetMonitor's table (an entry: client_entry.h), and the monitor's own C code records it: the
 * data path (cnm_account_call, io_hooks.c), to which the exported data-path calls send the
 * connection's calls (io_forwarders.c), and the replay of simple exchanges (exchange_replay.c),
 * armed when the connection is established with a template made here (a record's first line, the
 * connection's setup and identity: cnm_record_layout.h), so that it records the connection's first
 * exchange too. The connection's record is written here, at its close. The records are the
 * monitor's, field for field (LightClientTests compares them).
 *
 * What the replay refuses (CONNECT or a method with - or _, a 1xx answer but a bare 100 Continue, TLS
 * bytes outside a session tls_clients.c paired, a call on another thread) it hands to "Swift":
 * here, a callback that notes it. Once the call is accounted for, the monitor is loaded, takes
 * every connection tracked here over where it is (its replay stopped: Swift parses what the
 * replay took of the exchange under way from the heads it kept, at the times they moved:
 * ExchangeReplay.swift), and is handed the call's bytes. So are a connection closed with an
 * exchange under way (but an answer that runs to the close, which ends there), NSS's first call
 * (tls_triggers.c), an accept, and anything else that loads the monitor.
 *
 * Two threads: a call is accounted for between enter() and leave(), after its original returned;
 * the thread that hands the connections over raises `handing_over`, then waits until no call is
 * inside (sequentially consistent, both sides: one of them sees the other). A call that enters
 * after waits for the monitor to run and hands its bytes to it. No lock; the wait is never for a
 * call in the kernel. Nothing on a call's way allocates, locks or leaves errno changed; the first
 * connect's set-up does allocate (the engine's rebinding of the TLS triggers). */
#include "elfhook_preload.h"

#include "client_entry.h"
#include "cnetmonitor.h"
#include "cnm_host_header_name.h"
#include "cnm_record_layout.h"
#include "cnm_records.h"
#include "elfhook.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

typedef elfhook_client client;

enum { NOT_SET_UP, SETTING_UP, READY, UNFIT };
static int setup_state = NOT_SET_UP;
static uint64_t last_connection_id;
static uint32_t live_clients;
static uint32_t highest_fd; /* every tracked descriptor is below this */
static uint32_t accounting;
static bool handing_over;
/* Set by the replay's refusal (the "Swift" callbacks) on the thread whose call it refused. */
static __thread bool refused __attribute__((tls_model("initial-exec")));

#define NEXT(which, function) ((__typeof(function) *)elfhook_next(which))

static inline client *entry_of(int fd) { return elfhook_client_entry(fd); }

static inline void enter(void) { __atomic_add_fetch(&accounting, 1, __ATOMIC_SEQ_CST); }
static inline void leave(void) { __atomic_sub_fetch(&accounting, 1, __ATOMIC_SEQ_CST); }
static inline bool handed(void) { return __atomic_load_n(&handing_over, __ATOMIC_SEQ_CST); }

static void refuse(void *slot, const void *buffer, const struct iovec *vector, int vector_count, ssize_t result) {
  (void)slot, (void)buffer, (void)vector, (void)vector_count, (void)result;
  refused = true;
}

/* ---- which processes -------------------------------------------------------------------------- */

/* Whether a process's TLS may be out of the triggers' reach (tls_triggers.c), so that only the
 * monitor, loaded at its first connection, sees it from its start: an OpenSSL or BoringSSL inside
 * the executable, its `SSL_read` (or `CNIOBoringSSL_SSL_read`) in the executable's .dynsym (Node.js
 * exports its copy's) or in its file's .symtab (an unstripped SwiftNIO program): the look-up the
 * monitor's inline hooks make (LinkedOpenSSL.swift), by the same engine. An executable that is
 * merely unstripped (pyenv's python) is a light client. Once (set_up): its buffers are static. */
static bool tls_may_be_inside(void) {
  static char path[PATH_MAX], pattern[2 * PATH_MAX];
  ssize_t length = readlink("/proc/self/exe", path, sizeof path - 1);
  if (length <= 0) return true;
  size_t at = 0; /* the path as an fnmatch(3) pattern that matches only itself */
  for (ssize_t i = 0; i < length; i++) {
    if (strchr("*?[]\\", path[i])) pattern[at++] = '\\';
    pattern[at++] = path[i];
  }
  pattern[at] = 0;
  static const char *const names[] = {"SSL_read", "CNIOBoringSSL_SSL_read"};
  void *addresses[2];
  /* Found, or not known (a file that cannot be read): the monitor's. */
  return elfhook_find_functions(pattern, names, 2, addresses) != ELFHOOK_ERR_SYMBOL_NOT_FOUND;
}

static bool close_tracked(int fd, bool is_open);

/* A connection still tracked here at the process's exit is recorded then, as the monitor records
 * its own (ConnectionsAtExit.swift); one with an exchange under way is the monitor's to finish, so
 * the monitor is loaded for it, and records it at its own exit handler, which runs after this one. */
static void record_at_exit(void) {
  if (cnm_in_vfork_child()) return;
  int saved = errno;
  bool halfway = false;
  enter();
  if (!handed()) {
    uint32_t count = __atomic_load_n(&highest_fd, __ATOMIC_RELAXED);
    for (uint32_t fd = 0; fd < count; fd++) {
      if (cnm_tracked[fd] && !close_tracked((int)fd, true)) halfway = true;
    }
  }
  leave();
  if (halfway) elfhook_monitor_takes(NULL);
  errno = saved;
}

/* Sets this library's copy of the table, the replay and the record queue up, once; false when the
 * process is unfit (tls_may_be_inside) or something is missing (no ring: the monitor says why). */
static bool set_up(const elfhook_preload_configuration *configuration) {
  int state = __atomic_load_n(&setup_state, __ATOMIC_ACQUIRE);
  if (state == NOT_SET_UP &&
      __atomic_compare_exchange_n(&setup_state, &state, SETTING_UP, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
    int saved = errno;
    cnm_queue *ring = NULL;
    bool fit = !tls_may_be_inside() && cnm_table_set_up(sizeof(client)) && (ring = elfhook_ring(configuration)) &&
               elfhook_tls_triggers_set();
    if (fit) {
      cnm_set_traffic_callbacks(refuse, refuse, NULL);
      cnm_replay_fields_set_up();
      cnm_set_record_queue(ring);
      static bool exit_handler; /* a fork child that sets up again has its parent's */
      if (!exit_handler) exit_handler = atexit(record_at_exit) == 0;
    }
    errno = saved;
    state = fit ? READY : UNFIT;
    __atomic_store_n(&setup_state, state, __ATOMIC_RELEASE);
  }
  while (state == SETTING_UP) {
    sched_yield();
    state = __atomic_load_n(&setup_state, __ATOMIC_ACQUIRE);
  }
  return state == READY;
}

/* ---- a connection's life -------------------------------------------------------------------------- */

/* Arms the replay on the established connection, for the calling thread, with the template of the
 * connection's first exchange: an http record's first line, then the core from its setup on. */
static void arm(client *connection) {
  cnm_replay_template *template = &connection->head.replay;
  _Static_assert(offsetof(cnm_raw_record, http_response_bytes) + 8 <= 64, "a record's first line is 64 bytes");
  cnm_raw_record line; /* its first 64 bytes alone, made aligned, then copied */
  memset(&line, 0, 64);
  line.kind = CNM_RECORD_HTTP;
  line.pid = cnm_current_pid();
  line.http_protocol = CNM_HTTP_11;
  line.grpc_status = -1;
  memcpy(template->record, &line, 64);
  size_t setup = offsetof(cnm_connection_core, dns_ns);
  memcpy(template->record + 64, (const unsigned char *)&connection->core + setup, sizeof connection->core - setup);
  template->identity_length = (uint16_t)(sizeof connection->core - setup);
  template->run_length = 0;
  template->first_exchange = true;
  template->unix_offset = connection->core.start_unix_ns - connection->core.start_ns;
  connection->head.requests_received = 0;
  cnm_replay_arm(&connection->head, __atomic_load_n(&connection->head.replay_state, __ATOMIC_ACQUIRE));
}

static void establish(client *connection) {
  connection->core.connect_end = cnm_monotonic_ns();
  connection->core.phase = CNM_PHASE_ESTABLISHED;
  arm(connection);
}

static void fail(client *connection, int code) {
  connection->core.phase = CNM_PHASE_FAILED;
  if (!connection->core.error_call) {
    connection->core.error_call = CNM_ERROR_CALL_CONNECT;
    connection->core.error_code = code;
  }
  if (!connection->core.connect_end) connection->core.connect_end = cnm_monotonic_ns();
}

/* A non-blocking connect closed before anyone asked how it ended (the attempt a happy-eyeballs
 * client gave up): the socket says, as the monitor asks it (Traffic.connectUnchecked). */
static void settle_unchecked(int fd, client *connection, bool is_open) {
  int error = ECANCELED;
  socklen_t length = sizeof error;
  if (is_open && NEXT(ELFHOOK_GETSOCKOPT, getsockopt)(fd, SOL_SOCKET, SO_ERROR, &error, &length) == 0 && error == 0) {
    struct sockaddr_storage peer;
    socklen_t peer_length = sizeof peer;
    if (getpeername(fd, (struct sockaddr *)&peer, &peer_length) == 0) {
      connection->core.phase = CNM_PHASE_ESTABLISHED;
      return;
    }
    error = ECANCELED;
  }
  fail(connection, error == EINPROGRESS || error == EALREADY ? ECANCELED : error);
  connection->core.connect_end = 0;
}

/* A client connection that no lookup (or TLS server name) named takes the name its first request's
 * Host gives its server (the monitor's rule: cnm_host_header_name.h). */
void elfhook_client_name_by_request(client *connection) {
  if (connection->core.host.count != 0 ||
      (__atomic_load_n(&connection->head.replay_state, __ATOMIC_ACQUIRE) & CNM_REPLAY_PHASE) != CNM_REPLAY_REQUESTED)
    return;
  const cnm_simple_request *request = &connection->head.replay_request;
  const unsigned char *bytes = connection->head.replay_request_bytes, *host = bytes + request->host_offset;
  bool target_is_path = bytes[request->method_length + 1] == '/';
  size_t length = cnm_host_header_name_length(host, request->host_length, target_is_path, connection->core.peer.port,
                                              connection->core.is_tls);
  ELFHOOK_SET_TEXT(connection->core.host, host, length);
}

/* The connection's record (as Traffic.closed writes it), `streams` its HTTP/2 streams recorded. */
static void record_connection(client *connection, uint64_t streams) {
  cnm_queue *queue = cnm_record_queue();
  if (!queue) return;
  uint64_t end = cnm_monotonic_ns(), ticket;
  cnm_raw_record *record = cnm_queue_reserve(queue, &ticket);
  if (!record) {
    cnm_queue_count_drop(queue);
    return;
  }
  uint64_t state = __atomic_load_n(&connection->head.replay_state, __ATOMIC_ACQUIRE);
  connection->core.http_exchanges = (state >> CNM_REPLAY_COUNT_SHIFT) + streams;
  connection->core.bytes_sent = __atomic_load_n(&connection->head.bytes_sent, __ATOMIC_RELAXED);
  connection->core.bytes_received = __atomic_load_n(&connection->head.bytes_received, __ATOMIC_RELAXED);
  record->kind = CNM_RECORD_CONNECTION;
  record->pid = cnm_current_pid();
  record->start_unix_ns = connection->core.start_unix_ns;
  record->duration_ns = end - connection->core.start_ns;
  record->core = connection->core;
  cnm_queue_publish(queue, ticket);
}

/* `fd` is tracked here no more. */
static void forget(int fd) {
  cnm_set_tracked(fd, false);
  __atomic_sub_fetch(&live_clients, 1, __ATOMIC_RELAXED);
}

/* Records the connection on `fd` and stops tracking it (and the answer under way, when it runs to
 * the close); false, leaving it tracked, when it has another exchange under way (the monitor
 * finishes it: an unanswered request, or one answered halfway, is recorded so), or is a fork
 * child's inherited one that the child used. */
static bool close_tracked(int fd, bool is_open) {
  client *connection = entry_of(fd);
  if (connection->head.inherited) {
    /* A fork child's copy of its parent's connection: the parent's to record, unless the child
     * moved bytes on it (then the monitor, which took the rest of them, records it). */
    if (__atomic_load_n(&connection->head.bytes_sent, __ATOMIC_RELAXED) ||
        __atomic_load_n(&connection->head.bytes_received, __ATOMIC_RELAXED))
      return false;
    forget(fd);
    return true;
  }
  /* An answer that runs to the close ends here. */
  cnm_replay_end_at_close(&connection->head);
  uint64_t state = __atomic_load_n(&connection->head.replay_state, __ATOMIC_ACQUIRE);
  uint64_t phase = state & CNM_REPLAY_PHASE;
  if (phase == CNM_REPLAY_REQUESTED || phase == CNM_REPLAY_RESPONDING || (state & CNM_REPLAY_PARTIAL)) return false;
  uint64_t streams = elfhook_h2_client_finish(connection);
  if (connection->core.phase == CNM_PHASE_CONNECTING) settle_unchecked(fd, connection, is_open);
  record_connection(connection, streams);
  forget(fd);
  return true;
}

bool elfhook_client_connect(const elfhook_preload_configuration *configuration, int fd,
                            const struct sockaddr *address, socklen_t length, int *result) {
  if (fd < 0 || !set_up(configuration) || (unsigned)fd >= cnm_capacity) return false;
  int saved = errno, type = 0;
  socklen_t type_length = sizeof type;
  bool stream = NEXT(ELFHOOK_GETSOCKOPT, getsockopt)(fd, SOL_SOCKET, SO_TYPE, &type, &type_length) == 0 &&
                type == SOCK_STREAM;
  errno = saved;
  if (!stream) return false;
  enter();
  bool reused = cnm_tracked[fd] != 0 && !handed(); /* closed behind our back (fclose) and reused */
  bool closed = !reused || close_tracked(fd, false);
  leave();
  if (!closed) return false;

  uint64_t start = cnm_monotonic_ns();
  *result = NEXT(ELFHOOK_CONNECT, connect)(fd, address, length);
  int error = errno;
  client *connection = entry_of(fd);
  memset(connection, 0, sizeof *connection);
  cnm_connection_core *core = &connection->core;
  core->id = __atomic_add_fetch(&last_connection_id, 1, __ATOMIC_RELAXED);
  core->fd = fd;
  core->role = CNM_ROLE_CLIENT;
  core->transport = CNM_TRANSPORT_TCP;
  cnm_address_read(address, length, &core->peer);
  core->start_ns = start;
  core->start_unix_ns = cnm_unix_ns() - (cnm_monotonic_ns() - start);
  core->connect_start = start;
  cnm_resolution found;
  if (cnm_resolutions_look_up(&core->peer, (uint64_t)pthread_self(), &found)) {
    ELFHOOK_SET_TEXT(core->host, found.host, found.host_length);
    if (found.has_lookup_time) {
      core->dns_ns = found.lookup_ns;
      core->has_dns = 1;
    }
  }
  connection->head.watch_sent = CNM_WATCH_SWIFT;
  connection->head.watch_received = CNM_WATCH_SWIFT;
  if (*result == 0) establish(connection);
  else if (error == EINPROGRESS || error == EAGAIN) core->phase = CNM_PHASE_CONNECTING;
  else fail(connection, error);

  enter();
  if (!handed()) {
    if ((uint32_t)fd >= __atomic_load_n(&highest_fd, __ATOMIC_RELAXED)) __atomic_store_n(&highest_fd, (uint32_t)fd + 1, __ATOMIC_RELAXED);
    __atomic_add_fetch(&live_clients, 1, __ATOMIC_RELAXED);
    cnm_set_tracked(fd, true);
    leave();
  } else {
    leave();
    /* The monitor was taking the connections over meanwhile: it takes this one now. */
    if (elfhook_monitor_takes(__builtin_return_address(0))) elfhook_monitor_take_client(&connection->head, core);
  }
  errno = error;
  return true;
}

/* ---- calls on a tracked connection ------------------------------------------------------------ */

/* The call's bytes moved now: the monitor reads them as of now, however long its load (or the
 * wait for another thread's) takes. */
static void hand_to_monitor(int fd, bool received, const void *buffer, const struct iovec *vector, int vector_count,
                            ssize_t result, const void *caller) {
  cnm_handed_call call = {fd, received, false, buffer, vector, vector_count, result, cnm_monotonic_ns()};
  elfhook_hand_to_monitor(&call, caller);
}

void elfhook_client_moved(int fd, bool received, const void *buffer, const struct iovec *vector, int vector_count,
                          ssize_t result, const void *caller) {
  if (result <= 0) return;
  enter();
  if (handed()) {
    leave();
    hand_to_monitor(fd, received, buffer, vector, vector_count, result, caller);
    return;
  }
  if (!cnm_tracked[fd]) { /* closed by another thread meanwhile */
    leave();
    return;
  }
  client *connection = entry_of(fd);
  if (connection->core.phase == CNM_PHASE_CONNECTING) establish(connection);
  elfhook_tls_client_socket_call(connection, received, buffer, vector, vector_count);
  refused = false;
  int saved = errno;
  /* Cleartext HTTP/2 is read by h2_clients.c; what it leaves of a connection it reads is the
   * monitor's, the rest the replay's. */
  bool cleartext_h2 = !connection->head.is_tls && connection->h2.connection;
  bool taken = elfhook_h2_client_socket_bytes(connection, received, buffer, vector, vector_count, (size_t)result);
  if (!taken && !cleartext_h2) {
    cnm_account_call(fd, received, buffer, vector, vector_count, result);
    taken = !refused;
  }
  if (taken && !received) elfhook_client_name_by_request(connection);
  errno = saved;
  leave();
  if (!taken) hand_to_monitor(fd, received, buffer, vector, vector_count, result, caller);
}

void elfhook_client_asked_error(int fd, int error) {
  enter();
  if (!handed() && cnm_tracked[fd]) {
    client *connection = entry_of(fd);
    if (connection->core.phase == CNM_PHASE_CONNECTING) {
      if (error == 0) establish(connection);
      else if (error != EINPROGRESS && error != EALREADY) fail(connection, error);
    }
  }
  leave();
}

bool elfhook_client_closing(int fd) {
  /* A vfork child closes its own copy: the parent's connection lives on (and shares this memory). */
  if (cnm_in_vfork_child()) return true;
  int saved = errno; /* a connect never checked on is asked how it ended */
  enter();
  bool recorded = !handed() && (!cnm_tracked[fd] || close_tracked(fd, true));
  leave();
  errno = saved;
  return recorded;
}

bool elfhook_clients_live(void) { return __atomic_load_n(&live_clients, __ATOMIC_RELAXED) != 0; }

bool elfhook_clients_enter(void) {
  enter();
  return !handed();
}

void elfhook_clients_leave(void) { leave(); }

uint32_t elfhook_clients_end(void) { return __atomic_load_n(&highest_fd, __ATOMIC_RELAXED); }

void elfhook_client_rearm(client *connection) { arm(connection); }

/* ---- the monitor takes over ------------------------------------------------------------------- */

void elfhook_clients_handoff(cnm_handoff *handoff) {
  __atomic_store_n(&handing_over, true, __ATOMIC_SEQ_CST);
  while (__atomic_load_n(&accounting, __ATOMIC_SEQ_CST)) sched_yield();
  handoff->last_connection_id = __atomic_load_n(&last_connection_id, __ATOMIC_RELAXED);
  handoff->clients = NULL;
  handoff->clients_tracked = NULL;
  handoff->client_count = 0;
  /* Connections are tracked once set up, and in a fork child that has not set up again. */
  uint32_t count = __atomic_load_n(&highest_fd, __ATOMIC_RELAXED);
  if (count == 0) return;
  for (uint32_t fd = 0; fd < count; fd++) {
    if (cnm_tracked[fd]) cnm_replay_stop(&entry_of((int)fd)->head);
  }
  handoff->clients = cnm_states;
  handoff->clients_tracked = cnm_tracked;
  handoff->client_count = count;
  handoff->client_entry_size = cnm_slot_size;
  handoff->client_core_offset = offsetof(client, core);
  handoff->client_ssl_offset = offsetof(client, ssl);
  handoff->client_h2_offset = offsetof(client, h2);
}

/* No connection is tracked here any more. */
static void untrack_all(void) {
  uint32_t count = __atomic_load_n(&highest_fd, __ATOMIC_RELAXED);
  for (uint32_t fd = 0; fd < count; fd++) cnm_set_tracked((int)fd, false);
  __atomic_store_n(&live_clients, 0, __ATOMIC_RELAXED);
}

void elfhook_clients_handed_over(bool running) {
  (void)running; /* taken, or the process runs unmonitored: either way none is tracked here now */
  untrack_all();
}

/* In a fork child, the parent's connections stay tracked, as the child's copies (the monitor's
 * rule, fork_reset.c): their byte counts zeroed and marked inherited, their replays stopped (the
 * template names the parent). The child's first bytes on one are no simple exchange to the
 * stopped replay: they load the monitor, which takes the connections over (and gives the child a
 * ring of its own) and records what the child does with them. One the child never uses is not
 * recorded by the child. */
static void inherit_all(void) {
  uint32_t count = __atomic_load_n(&highest_fd, __ATOMIC_RELAXED);
  for (uint32_t fd = 0; fd < count; fd++) {
    if (cnm_tracked[fd]) cnm_inherit_connection(&entry_of((int)fd)->head);
  }
}

void elfhook_clients_after_fork_in_child(void) {
  /* A thread of the parent that was inside a call does not exist here. */
  __atomic_store_n(&accounting, 0, __ATOMIC_RELAXED);
  cnm_h2_pool_after_fork();
  if (__atomic_load_n(&setup_state, __ATOMIC_ACQUIRE) != READY) return;
  inherit_all();
  /* The parent's ring is not the child's (lookups.c unmapped it): the next connect sets up again. */
  cnm_set_record_queue(NULL);
  __atomic_store_n(&setup_state, NOT_SET_UP, __ATOMIC_RELEASE);
}
