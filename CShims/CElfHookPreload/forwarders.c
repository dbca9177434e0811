/* The calls that start the monitor (elfhook_preload.h): connect, accept and accept4, exported under
 * their own names so that the dynamic linker binds every image's slots for them to these
 * functions, ahead of libc's; getaddrinfo, exported the same way, whose lookups are recorded here
 * until the monitor runs; and the calls that change the user id or the root directory, before
 * which it starts.
 *
 * The first internet connect or accept (on any thread; IPv4 or IPv6: a unix socket's never makes a
 * record) loads the monitor, which rewrites every image's GOT slots — these four included, so
 * later calls never come here — and then goes through the monitor's hook, so the connection or
 * lookup that started it is recorded. Calls that still arrive here afterwards go
 * straight to libc's function: a function pointer taken with dlsym before or after the start (not
 * monitored, like any pointer captured outside a GOT), or the monitor's own hook calling its
 * original, which for an image loaded later can be this function. A thread that arrives while
 * another starts the monitor waits for it (a few milliseconds, once), then uses the hook — unless
 * it comes from the monitor's own code: a hook whose slot was written before its original was
 * adopted, calling that original.
 *
 * With light clients (the default), an internet TCP connect while the monitor is armed is tracked
 * by clients.c instead, and loads nothing; this file also holds the table of every exported name
 * (elfhook_forwarders) and the monitor's start, which the other exports use. */
#include "elfhook_preload.h"

#include <dlfcn.h>
#include <errno.h>
#include <netdb.h>
#include <pthread.h>
#include <sched.h>
#include <sys/socket.h>
#include <unistd.h>

enum { UNMONITORED, ARMED, STARTING, RUNNING };
static int state = UNMONITORED;
static elfhook_preload_configuration armed_configuration;
/* Set on the thread that is starting the monitor: a call it makes meanwhile (the monitor's own
 * start) goes to libc, never into a wait for itself. */
static __thread bool starting_here __attribute__((tls_model("initial-exec")));

static __typeof(connect) forward_connect;
static __typeof(accept) forward_accept;
static __typeof(accept4) forward_accept4;
static __typeof(getaddrinfo) forward_getaddrinfo;
static __typeof(setuid) forward_setuid;
static __typeof(seteuid) forward_seteuid;
static __typeof(setreuid) forward_setreuid;
static __typeof(setresuid) forward_setresuid;
static __typeof(chroot) forward_chroot;

#define FORWARDER(which, name, function) [which] = {name, (void *)function, NULL, NULL}
elfhook_forwarder elfhook_forwarders[ELFHOOK_EXPORTS] = {
    FORWARDER(ELFHOOK_CONNECT, "connect", forward_connect),
    FORWARDER(ELFHOOK_ACCEPT, "accept", forward_accept),
    FORWARDER(ELFHOOK_ACCEPT4, "accept4", forward_accept4),
    FORWARDER(ELFHOOK_GETADDRINFO, "getaddrinfo", forward_getaddrinfo),
    FORWARDER(ELFHOOK_READ, "read", elfhook_forward_read),
    FORWARDER(ELFHOOK_READV, "readv", elfhook_forward_readv),
    FORWARDER(ELFHOOK_RECV, "recv", elfhook_forward_recv),
    FORWARDER(ELFHOOK_RECVFROM, "recvfrom", elfhook_forward_recvfrom),
    FORWARDER(ELFHOOK_RECVMSG, "recvmsg", elfhook_forward_recvmsg),
    FORWARDER(ELFHOOK_WRITE, "write", elfhook_forward_write),
    FORWARDER(ELFHOOK_WRITEV, "writev", elfhook_forward_writev),
    FORWARDER(ELFHOOK_SEND, "send", elfhook_forward_send),
    FORWARDER(ELFHOOK_SENDTO, "sendto", elfhook_forward_sendto),
    FORWARDER(ELFHOOK_SENDMSG, "sendmsg", elfhook_forward_sendmsg),
    FORWARDER(ELFHOOK_SENDFILE, "sendfile", elfhook_forward_sendfile),
    FORWARDER(ELFHOOK_SENDFILE64, "sendfile64", elfhook_forward_sendfile64),
    FORWARDER(ELFHOOK_CLOSE, "close", elfhook_forward_close),
    FORWARDER(ELFHOOK_GETSOCKOPT, "getsockopt", elfhook_forward_getsockopt),
    FORWARDER(ELFHOOK_DUP2, "dup2", elfhook_forward_dup2),
    FORWARDER(ELFHOOK_DUP3, "dup3", elfhook_forward_dup3),
    FORWARDER(ELFHOOK_CLOSE_RANGE, "close_range", elfhook_forward_close_range),
    FORWARDER(ELFHOOK_CLOSEFROM, "closefrom", elfhook_forward_closefrom),
    FORWARDER(ELFHOOK_SSL_DO_HANDSHAKE, "SSL_do_handshake", elfhook_forward_SSL_do_handshake),
    FORWARDER(ELFHOOK_SSL_CONNECT, "SSL_connect", elfhook_forward_SSL_connect),
    FORWARDER(ELFHOOK_SSL_ACCEPT, "SSL_accept", elfhook_forward_SSL_accept),
    FORWARDER(ELFHOOK_SSL_READ, "SSL_read", elfhook_forward_SSL_read),
    FORWARDER(ELFHOOK_SSL_READ_EX, "SSL_read_ex", elfhook_forward_SSL_read_ex),
    FORWARDER(ELFHOOK_SSL_WRITE, "SSL_write", elfhook_forward_SSL_write),
    FORWARDER(ELFHOOK_SSL_WRITE_EX, "SSL_write_ex", elfhook_forward_SSL_write_ex),
    FORWARDER(ELFHOOK_GNUTLS_HANDSHAKE, "gnutls_handshake", elfhook_forward_gnutls_handshake),
    FORWARDER(ELFHOOK_GNUTLS_RECORD_SEND, "gnutls_record_send", elfhook_forward_gnutls_record_send),
    FORWARDER(ELFHOOK_GNUTLS_RECORD_SEND2, "gnutls_record_send2", elfhook_forward_gnutls_record_send2),
    FORWARDER(ELFHOOK_GNUTLS_RECORD_RECV, "gnutls_record_recv", elfhook_forward_gnutls_record_recv),
    FORWARDER(ELFHOOK_GNUTLS_RECORD_RECV_SEQ, "gnutls_record_recv_seq", elfhook_forward_gnutls_record_recv_seq),
    FORWARDER(ELFHOOK_SSL_FORCE_HANDSHAKE, "SSL_ForceHandshake", elfhook_forward_SSL_ForceHandshake),
    FORWARDER(ELFHOOK_SSL_FORCE_HANDSHAKE_WITH_TIMEOUT, "SSL_ForceHandshakeWithTimeout",
              elfhook_forward_SSL_ForceHandshakeWithTimeout),
    FORWARDER(ELFHOOK_PR_READ, "PR_Read", elfhook_forward_PR_Read),
    FORWARDER(ELFHOOK_PR_WRITE, "PR_Write", elfhook_forward_PR_Write),
    FORWARDER(ELFHOOK_PR_RECV, "PR_Recv", elfhook_forward_PR_Recv),
    FORWARDER(ELFHOOK_PR_SEND, "PR_Send", elfhook_forward_PR_Send),
    FORWARDER(ELFHOOK_SETUID, "setuid", forward_setuid),
    FORWARDER(ELFHOOK_SETEUID, "seteuid", forward_seteuid),
    FORWARDER(ELFHOOK_SETREUID, "setreuid", forward_setreuid),
    FORWARDER(ELFHOOK_SETRESUID, "setresuid", forward_setresuid),
    FORWARDER(ELFHOOK_CHROOT, "chroot", forward_chroot),
};

/* A fork while another thread was starting the monitor leaves the child with a half-started one:
 * the child runs unmonitored rather than waiting for a thread it does not have. */
static void after_fork_in_child(void) {
  if (__atomic_load_n(&state, __ATOMIC_ACQUIRE) == STARTING) __atomic_store_n(&state, UNMONITORED, __ATOMIC_RELEASE);
  elfhook_lookups_after_fork_in_child();
  elfhook_clients_after_fork_in_child();
}

/* The TLS names are no exports: their `next` is what the triggers' slots held (tls_triggers.c). */
static bool is_tls(elfhook_export which) { return which >= ELFHOOK_SSL_DO_HANDSHAKE && which < ELFHOOK_HOOKED_EXPORTS; }

void *elfhook_next_slow(elfhook_export which) {
  if (is_tls(which)) return NULL;
  void *next = dlsym(RTLD_NEXT, elfhook_forwarders[which].name);
  if (!next) dlerror(); /* read, so the host's next dlerror() does not see it */
  __atomic_store_n(&elfhook_forwarders[which].next, next, __ATOMIC_RELEASE);
  return next;
}

static void *next_of(elfhook_export which) { return elfhook_next(which); }

/* The names libc must have for the monitor to start: the ones that start it, and the data path
 * (close_range and closefrom, newer, are looked up when called). */
static bool from_libc(elfhook_export which) {
  return which < ELFHOOK_CLOSE_RANGE || which >= ELFHOOK_HOOKED_EXPORTS;
}

void elfhook_arm(const elfhook_preload_configuration *configuration) {
  for (elfhook_export i = 0; i < ELFHOOK_EXPORTS; i++) {
    if (from_libc(i) && !next_of(i)) {
      if (configuration->log != ELFHOOK_LOG_OFF) elfhook_say_unmonitored("libc has no %s", elfhook_forwarders[i].name);
      return;
    }
  }
  armed_configuration = *configuration;
  pthread_atfork(NULL, NULL, after_fork_in_child);
  __atomic_store_n(&state, ARMED, __ATOMIC_RELEASE);
}

/* Starts the monitor if it is armed, or waits for the thread that is starting it. Returns the
 * state then: RUNNING or UNMONITORED. errno is kept as the caller left it. */
static int start_monitor(void) {
  int current = __atomic_load_n(&state, __ATOMIC_ACQUIRE);
  int saved_errno = errno;
  if (current == ARMED && __atomic_compare_exchange_n(&state, &current, STARTING, false, __ATOMIC_ACQ_REL,
                                                      __ATOMIC_ACQUIRE)) {
    starting_here = true;
    bool running = elfhook_load_monitor(&armed_configuration, elfhook_forwarders, ELFHOOK_HOOKED_EXPORTS);
    starting_here = false;
    current = running ? RUNNING : UNMONITORED;
    __atomic_store_n(&state, current, __ATOMIC_RELEASE);
  }
  while (current == STARTING) {
    sched_yield();
    current = __atomic_load_n(&state, __ATOMIC_ACQUIRE);
  }
  errno = saved_errno;
  return current;
}

/* Where a call of forwarder `which`, made from `caller` (its return address), goes: the monitor's
 * hook when this call started the monitor or waited for it; else libc's function. While another
 * thread starts the monitor, the hooks are in the images' slots before their originals are adopted
 * (elfhook_load_monitor), so a hook's call of its original can arrive here: it goes to libc's
 * function, or the hook would run twice for one call (and record its connection twice). */
void *elfhook_route(elfhook_export which, const void *caller) {
  int current = __atomic_load_n(&state, __ATOMIC_ACQUIRE);
  if (current == RUNNING || current == UNMONITORED || starting_here) return next_of(which);
  if (current == STARTING && elfhook_called_from_monitor(caller)) return next_of(which);
  void *hook = start_monitor() == RUNNING ? elfhook_forwarders[which].hook : NULL;
  return hook ? hook : next_of(which);
}

bool elfhook_monitor_takes(const void *caller) {
  if (starting_here) return false;
  int current = __atomic_load_n(&state, __ATOMIC_ACQUIRE);
  if (current == STARTING && elfhook_called_from_monitor(caller)) return false;
  return start_monitor() == RUNNING;
}

bool elfhook_monitor_armed(void) { return __atomic_load_n(&state, __ATOMIC_ACQUIRE) == ARMED && !starting_here; }

/* Whether a connect to `address` can make a connection the monitor records: an internet one (IPv4,
 * IPv6). A unix socket's (a local daemon, syslog, D-Bus) never is, so it does not load the monitor:
 * a process that talks only to local sockets pays nothing (~2 ms and ~3.4 MB of RSS when it did). */
static bool may_record(const struct sockaddr *address, socklen_t length) {
  if (!address || length < sizeof(sa_family_t)) return false;
  sa_family_t family = address->sa_family;
  return family == AF_INET || family == AF_INET6;
}

static int forward_connect(int fd, __CONST_SOCKADDR_ARG address, socklen_t length) {
  if (!may_record(address.__sockaddr__, length))
    return ((__typeof(connect) *)next_of(ELFHOOK_CONNECT))(fd, address, length);
  int result;
  if (armed_configuration.light_clients && elfhook_monitor_armed() &&
      elfhook_client_connect(&armed_configuration, fd, address.__sockaddr__, length, &result))
    return result;
  __typeof(connect) *through = (__typeof(connect) *)elfhook_route(ELFHOOK_CONNECT, __builtin_return_address(0));
  return through(fd, address, length);
}
/* Whether a socket listens on an internet address: asked (one getsockname) only while the monitor
 * is not running, so that a server of unix sockets alone never loads it either. */
static bool listens_on_internet(int fd) {
  if (__atomic_load_n(&state, __ATOMIC_ACQUIRE) != ARMED) return true;
  struct sockaddr_storage local;
  socklen_t length = sizeof local;
  int saved_errno = errno;
  bool answer =
      getsockname(fd, (struct sockaddr *)&local, &length) == 0 && may_record((struct sockaddr *)&local, length);
  errno = saved_errno;
  return answer;
}

static int forward_accept(int fd, __SOCKADDR_ARG address, socklen_t *restrict length) {
  __typeof(accept) *through = listens_on_internet(fd)
                                  ? (__typeof(accept) *)elfhook_route(ELFHOOK_ACCEPT, __builtin_return_address(0))
                                  : (__typeof(accept) *)next_of(ELFHOOK_ACCEPT);
  return through(fd, address, length);
}
static int forward_accept4(int fd, __SOCKADDR_ARG address, socklen_t *restrict length, int flags) {
  __typeof(accept4) *through = listens_on_internet(fd)
                                   ? (__typeof(accept4) *)elfhook_route(ELFHOOK_ACCEPT4, __builtin_return_address(0))
                                   : (__typeof(accept4) *)next_of(ELFHOOK_ACCEPT4);
  return through(fd, address, length, flags);
}
/* A lookup never loads the monitor: while it is not loaded, the lookup is recorded here (lookups.c);
 * while another thread loads it, the lookup waits and goes through its hook. A call without a name
 * (a service's port alone) is no lookup. */
static int forward_getaddrinfo(const char *restrict name, const char *restrict service,
                               const struct addrinfo *restrict hints, struct addrinfo **restrict result) {
  int current = __atomic_load_n(&state, __ATOMIC_ACQUIRE);
  if (current == STARTING) {
    __typeof(getaddrinfo) *through = (__typeof(getaddrinfo) *)elfhook_route(ELFHOOK_GETADDRINFO, __builtin_return_address(0));
    return through(name, service, hints, result);
  }
  __typeof(getaddrinfo) *next = (__typeof(getaddrinfo) *)next_of(ELFHOOK_GETADDRINFO);
  if (current != ARMED || starting_here || !name) return next(name, service, hints, result);
  uint64_t start_unix = cnm_unix_ns(), start = cnm_monotonic_ns();
  int status = next(name, service, hints, result);
  uint64_t end = cnm_monotonic_ns();
  int saved_errno = errno;
  elfhook_record_lookup(&armed_configuration, name, status, saved_errno, status == 0 ? *result : NULL, start_unix,
                        end - start);
  errno = saved_errno;
  return status;
}

/* A process that gives up its user id (an nginx worker becoming www-data) or its root directory
 * starts the monitor first, while it can still create its ring in a directory only the user it ran
 * as may write to, and read the monitor's file: it is a server, about to accept connections anyway. */
static void before_losing_access(void) {
  if (__atomic_load_n(&state, __ATOMIC_ACQUIRE) == ARMED && !starting_here) start_monitor();
}
static int forward_setuid(uid_t user) {
  before_losing_access();
  return ((__typeof(setuid) *)next_of(ELFHOOK_SETUID))(user);
}
static int forward_seteuid(uid_t user) {
  before_losing_access();
  return ((__typeof(seteuid) *)next_of(ELFHOOK_SETEUID))(user);
}
static int forward_setreuid(uid_t real, uid_t effective) {
  before_losing_access();
  return ((__typeof(setreuid) *)next_of(ELFHOOK_SETREUID))(real, effective);
}
static int forward_setresuid(uid_t real, uid_t effective, uid_t saved) {
  before_losing_access();
  return ((__typeof(setresuid) *)next_of(ELFHOOK_SETRESUID))(real, effective, saved);
}
static int forward_chroot(const char *path) {
  before_losing_access();
  return ((__typeof(chroot) *)next_of(ELFHOOK_CHROOT))(path);
}

/* The exported names. */
extern __typeof(connect) connect __attribute__((alias("forward_connect"), visibility("default")));
extern __typeof(accept) accept __attribute__((alias("forward_accept"), visibility("default")));
extern __typeof(accept4) accept4 __attribute__((alias("forward_accept4"), visibility("default")));
extern __typeof(getaddrinfo) getaddrinfo __attribute__((alias("forward_getaddrinfo"), visibility("default")));
extern __typeof(setuid) setuid __attribute__((alias("forward_setuid"), visibility("default")));
extern __typeof(seteuid) seteuid __attribute__((alias("forward_seteuid"), visibility("default")));
extern __typeof(setreuid) setreuid __attribute__((alias("forward_setreuid"), visibility("default")));
extern __typeof(setresuid) setresuid __attribute__((alias("forward_setresuid"), visibility("default")));
extern __typeof(chroot) chroot __attribute__((alias("forward_chroot"), visibility("default")));
