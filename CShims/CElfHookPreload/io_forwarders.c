/* The data path and the calls that end connections, exported (elfhook_preload.h): read, write and
 * their families, close, dup2, dup3, close_range, closefrom, and getsockopt, which tells a
 * non-blocking connect's end. The dynamic linker binds every image's slots for them here, ahead of
 * libc's, so the connections the injected library tracks itself (clients.c) are seen without a
 * GOT slot written.
 *
 * Every call pays one test first: is its descriptor a connection tracked here? Before the first
 * one (and for every other descriptor) that is a bounds check against a capacity of 0, then a tail
 * call of libc's function. Once the monitor runs, the images' slots hold its hooks, whose
 * originals are libc's (it adopts these forwarders): calls come here only through a pointer taken
 * with dlsym, and a connection the monitor took over is handed to it (clients.c). */
#include "elfhook_preload.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/socket.h>

#define NEXT(which, function) ((__typeof(function) *)elfhook_next(which))
/* The host's call site: a call from the monitor's own hook is never handed to the monitor again. */
#define CALLER __builtin_return_address(0)

/* libc's function, called: every way out of a forwarder is a tail call, so the common one (a
 * descriptor not tracked here, libc's function known) needs no stack frame. A name's first call
 * looks libc's function up, out of line (`first_NAME`). */
#define FIRST_CALL(result, function, which, parameters, arguments) \
  __attribute__((noinline, cold)) static result first_##function parameters { return NEXT(which, function) arguments; }
#define CALL_NEXT(function, which, arguments)                                                                \
  do {                                                                                                       \
    __typeof(function) *next = (__typeof(function) *)__atomic_load_n(&elfhook_forwarders[which].next, __ATOMIC_ACQUIRE); \
    if (__builtin_expect(next == NULL, 0)) return first_##function arguments;                                \
    return next arguments;                                                                                   \
  } while (0)

/* ---- receiving ---------------------------------------------------------------------------------- */

__attribute__((noinline)) static ssize_t client_read(int fd, void *buffer, size_t count, const void *caller) {
  ssize_t result = NEXT(ELFHOOK_READ, read)(fd, buffer, count);
  elfhook_client_moved(fd, true, buffer, NULL, 0, result, caller);
  return result;
}
FIRST_CALL(ssize_t, read, ELFHOOK_READ, (int fd, void *buffer, size_t count), (fd, buffer, count))
ssize_t elfhook_forward_read(int fd, void *buffer, size_t count) {
  if (elfhook_client_tracked(fd)) return client_read(fd, buffer, count, CALLER);
  CALL_NEXT(read, ELFHOOK_READ, (fd, buffer, count));
}

__attribute__((noinline)) static ssize_t client_readv(int fd, const struct iovec *vector, int count, const void *caller) {
  ssize_t result = NEXT(ELFHOOK_READV, readv)(fd, vector, count);
  elfhook_client_moved(fd, true, NULL, vector, count, result, caller);
  return result;
}
FIRST_CALL(ssize_t, readv, ELFHOOK_READV, (int fd, const struct iovec *vector, int count), (fd, vector, count))
ssize_t elfhook_forward_readv(int fd, const struct iovec *vector, int count) {
  if (elfhook_client_tracked(fd)) return client_readv(fd, vector, count, CALLER);
  CALL_NEXT(readv, ELFHOOK_READV, (fd, vector, count));
}

/* MSG_PEEK leaves the bytes in the socket: they are counted when they are read for real. */
__attribute__((noinline)) static ssize_t client_recv(int fd, void *buffer, size_t count, int flags, const void *caller) {
  ssize_t result = NEXT(ELFHOOK_RECV, recv)(fd, buffer, count, flags);
  if (!(flags & MSG_PEEK)) elfhook_client_moved(fd, true, buffer, NULL, 0, result, caller);
  return result;
}
FIRST_CALL(ssize_t, recv, ELFHOOK_RECV, (int fd, void *buffer, size_t count, int flags), (fd, buffer, count, flags))
ssize_t elfhook_forward_recv(int fd, void *buffer, size_t count, int flags) {
  if (elfhook_client_tracked(fd)) return client_recv(fd, buffer, count, flags, CALLER);
  CALL_NEXT(recv, ELFHOOK_RECV, (fd, buffer, count, flags));
}

__attribute__((noinline)) static ssize_t client_recvfrom(int fd, void *buffer, size_t count, int flags,
                                                         __SOCKADDR_ARG address, socklen_t *length, const void *caller) {
  ssize_t result = NEXT(ELFHOOK_RECVFROM, recvfrom)(fd, buffer, count, flags, address, length);
  if (!(flags & MSG_PEEK)) elfhook_client_moved(fd, true, buffer, NULL, 0, result, caller);
  return result;
}
FIRST_CALL(ssize_t, recvfrom, ELFHOOK_RECVFROM, (int fd, void *buffer, size_t count, int flags, __SOCKADDR_ARG address, socklen_t *length), (fd, buffer, count, flags, address, length))
ssize_t elfhook_forward_recvfrom(int fd, void *buffer, size_t count, int flags, __SOCKADDR_ARG address,
                                 socklen_t *length) {
  if (elfhook_client_tracked(fd)) return client_recvfrom(fd, buffer, count, flags, address, length, CALLER);
  CALL_NEXT(recvfrom, ELFHOOK_RECVFROM, (fd, buffer, count, flags, address, length));
}

__attribute__((noinline)) static ssize_t client_recvmsg(int fd, struct msghdr *message, int flags, const void *caller) {
  ssize_t result = NEXT(ELFHOOK_RECVMSG, recvmsg)(fd, message, flags);
  if (!(flags & MSG_PEEK) && message)
    elfhook_client_moved(fd, true, NULL, message->msg_iov, (int)message->msg_iovlen, result, caller);
  return result;
}
FIRST_CALL(ssize_t, recvmsg, ELFHOOK_RECVMSG, (int fd, struct msghdr *message, int flags), (fd, message, flags))
ssize_t elfhook_forward_recvmsg(int fd, struct msghdr *message, int flags) {
  if (elfhook_client_tracked(fd)) return client_recvmsg(fd, message, flags, CALLER);
  CALL_NEXT(recvmsg, ELFHOOK_RECVMSG, (fd, message, flags));
}

/* ---- sending ------------------------------------------------------------------------------------ */

__attribute__((noinline)) static ssize_t client_write(int fd, const void *buffer, size_t count, const void *caller) {
  ssize_t result = NEXT(ELFHOOK_WRITE, write)(fd, buffer, count);
  elfhook_client_moved(fd, false, buffer, NULL, 0, result, caller);
  return result;
}
FIRST_CALL(ssize_t, write, ELFHOOK_WRITE, (int fd, const void *buffer, size_t count), (fd, buffer, count))
ssize_t elfhook_forward_write(int fd, const void *buffer, size_t count) {
  if (elfhook_client_tracked(fd)) return client_write(fd, buffer, count, CALLER);
  CALL_NEXT(write, ELFHOOK_WRITE, (fd, buffer, count));
}

__attribute__((noinline)) static ssize_t client_writev(int fd, const struct iovec *vector, int count, const void *caller) {
  ssize_t result = NEXT(ELFHOOK_WRITEV, writev)(fd, vector, count);
  elfhook_client_moved(fd, false, NULL, vector, count, result, caller);
  return result;
}
FIRST_CALL(ssize_t, writev, ELFHOOK_WRITEV, (int fd, const struct iovec *vector, int count), (fd, vector, count))
ssize_t elfhook_forward_writev(int fd, const struct iovec *vector, int count) {
  if (elfhook_client_tracked(fd)) return client_writev(fd, vector, count, CALLER);
  CALL_NEXT(writev, ELFHOOK_WRITEV, (fd, vector, count));
}

__attribute__((noinline)) static ssize_t client_send(int fd, const void *buffer, size_t count, int flags, const void *caller) {
  ssize_t result = NEXT(ELFHOOK_SEND, send)(fd, buffer, count, flags);
  elfhook_client_moved(fd, false, buffer, NULL, 0, result, caller);
  return result;
}
FIRST_CALL(ssize_t, send, ELFHOOK_SEND, (int fd, const void *buffer, size_t count, int flags), (fd, buffer, count, flags))
ssize_t elfhook_forward_send(int fd, const void *buffer, size_t count, int flags) {
  if (elfhook_client_tracked(fd)) return client_send(fd, buffer, count, flags, CALLER);
  CALL_NEXT(send, ELFHOOK_SEND, (fd, buffer, count, flags));
}

__attribute__((noinline)) static ssize_t client_sendto(int fd, const void *buffer, size_t count, int flags,
                                                       __CONST_SOCKADDR_ARG address, socklen_t length, const void *caller) {
  ssize_t result = NEXT(ELFHOOK_SENDTO, sendto)(fd, buffer, count, flags, address, length);
  elfhook_client_moved(fd, false, buffer, NULL, 0, result, caller);
  return result;
}
FIRST_CALL(ssize_t, sendto, ELFHOOK_SENDTO, (int fd, const void *buffer, size_t count, int flags, __CONST_SOCKADDR_ARG address, socklen_t length), (fd, buffer, count, flags, address, length))
ssize_t elfhook_forward_sendto(int fd, const void *buffer, size_t count, int flags, __CONST_SOCKADDR_ARG address,
                               socklen_t length) {
  if (elfhook_client_tracked(fd)) return client_sendto(fd, buffer, count, flags, address, length, CALLER);
  CALL_NEXT(sendto, ELFHOOK_SENDTO, (fd, buffer, count, flags, address, length));
}

__attribute__((noinline)) static ssize_t client_sendmsg(int fd, const struct msghdr *message, int flags, const void *caller) {
  ssize_t result = NEXT(ELFHOOK_SENDMSG, sendmsg)(fd, message, flags);
  if (message) elfhook_client_moved(fd, false, NULL, message->msg_iov, (int)message->msg_iovlen, result, caller);
  return result;
}
FIRST_CALL(ssize_t, sendmsg, ELFHOOK_SENDMSG, (int fd, const struct msghdr *message, int flags), (fd, message, flags))
ssize_t elfhook_forward_sendmsg(int fd, const struct msghdr *message, int flags) {
  if (elfhook_client_tracked(fd)) return client_sendmsg(fd, message, flags, CALLER);
  CALL_NEXT(sendmsg, ELFHOOK_SENDMSG, (fd, message, flags));
}

/* The bytes come from a file: counted, their content not seen (the replay counts a body so). */
__attribute__((noinline)) static ssize_t client_sendfile(int out_fd, int in_fd, off_t *offset, size_t count, const void *caller) {
  ssize_t result = NEXT(ELFHOOK_SENDFILE, sendfile)(out_fd, in_fd, offset, count);
  elfhook_client_moved(out_fd, false, NULL, NULL, 0, result, caller);
  return result;
}
FIRST_CALL(ssize_t, sendfile, ELFHOOK_SENDFILE, (int out_fd, int in_fd, off_t *offset, size_t count), (out_fd, in_fd, offset, count))
ssize_t elfhook_forward_sendfile(int out_fd, int in_fd, off_t *offset, size_t count) {
  if (elfhook_client_tracked(out_fd)) return client_sendfile(out_fd, in_fd, offset, count, CALLER);
  CALL_NEXT(sendfile, ELFHOOK_SENDFILE, (out_fd, in_fd, offset, count));
}

__attribute__((noinline)) static ssize_t client_sendfile64(int out_fd, int in_fd, off64_t *offset, size_t count, const void *caller) {
  ssize_t result = NEXT(ELFHOOK_SENDFILE64, sendfile64)(out_fd, in_fd, offset, count);
  elfhook_client_moved(out_fd, false, NULL, NULL, 0, result, caller);
  return result;
}
FIRST_CALL(ssize_t, sendfile64, ELFHOOK_SENDFILE64, (int out_fd, int in_fd, off64_t *offset, size_t count), (out_fd, in_fd, offset, count))
ssize_t elfhook_forward_sendfile64(int out_fd, int in_fd, off64_t *offset, size_t count) {
  if (elfhook_client_tracked(out_fd)) return client_sendfile64(out_fd, in_fd, offset, count, CALLER);
  CALL_NEXT(sendfile64, ELFHOOK_SENDFILE64, (out_fd, in_fd, offset, count));
}

/* ---- a non-blocking connect's end --------------------------------------------------------------- */

int elfhook_forward_getsockopt(int fd, int level, int option, void *value, socklen_t *length) {
  int result = NEXT(ELFHOOK_GETSOCKOPT, getsockopt)(fd, level, option, value, length);
  if (elfhook_client_tracked(fd) && result == 0 && level == SOL_SOCKET && option == SO_ERROR && value &&
      length && *length >= sizeof(int))
    elfhook_client_asked_error(fd, *(int *)value);
  return result;
}

/* ---- the calls that end connections --------------------------------------------------------------
 * A connection tracked here is recorded first; one with an exchange under way is closed by the
 * monitor's hook, which finishes that exchange as it finishes its own. */

__attribute__((noinline)) static int client_close(int fd, const void *caller) {
  __typeof(close) *through =
      elfhook_client_closing(fd) ? NEXT(ELFHOOK_CLOSE, close) : (__typeof(close) *)elfhook_route(ELFHOOK_CLOSE, caller);
  return through(fd);
}
FIRST_CALL(int, close, ELFHOOK_CLOSE, (int fd), (fd))
int elfhook_forward_close(int fd) {
  if (elfhook_client_tracked(fd)) return client_close(fd, CALLER);
  CALL_NEXT(close, ELFHOOK_CLOSE, (fd));
}

/* dup2 and dup3 close `replaced` when `source` is open and another descriptor. */
static bool replaced_by_monitor(int source, int replaced) {
  if (source == replaced || !elfhook_client_tracked(replaced)) return false;
  int saved = errno;
  bool open = fcntl(source, F_GETFD) != -1;
  errno = saved;
  return open && !elfhook_client_closing(replaced);
}

int elfhook_forward_dup2(int source, int replaced) {
  __typeof(dup2) *through = NEXT(ELFHOOK_DUP2, dup2);
  if (replaced_by_monitor(source, replaced)) through = (__typeof(dup2) *)elfhook_route(ELFHOOK_DUP2, CALLER);
  return through(source, replaced);
}

int elfhook_forward_dup3(int source, int replaced, int flags) {
  __typeof(dup3) *through = NEXT(ELFHOOK_DUP3, dup3);
  if (replaced_by_monitor(source, replaced)) through = (__typeof(dup3) *)elfhook_route(ELFHOOK_DUP3, CALLER);
  return through(source, replaced, flags);
}

#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif

/* Records the connections tracked here on a descriptor in first…last; false when one of them is
 * the monitor's to close (the call then goes to the monitor's hook, which closes them all). */
static bool closing_range(unsigned first, unsigned last) {
  uint32_t capacity = __atomic_load_n(&cnm_capacity, __ATOMIC_ACQUIRE);
  if (first >= capacity || first > last) return true;
  if (last >= capacity) last = capacity - 1;
  bool recorded = true;
  for (unsigned fd = first; fd <= last; fd++) {
    if (cnm_tracked[fd] && !elfhook_client_closing((int)fd)) recorded = false;
  }
  return recorded;
}

/* close_range and closefrom (glibc 2.34): ENOSYS where libc has neither, as such a libc would. */
int elfhook_forward_close_range(unsigned first, unsigned last, int flags) {
  int (*through)(unsigned, unsigned, int) = elfhook_next(ELFHOOK_CLOSE_RANGE);
  /* CLOSE_RANGE_CLOEXEC only marks them: they close at an exec, where the table goes too. */
  if (!(flags & CLOSE_RANGE_CLOEXEC) && !closing_range(first, last))
    through = elfhook_route(ELFHOOK_CLOSE_RANGE, CALLER);
  if (!through) {
    errno = ENOSYS;
    return -1;
  }
  return through(first, last, flags);
}

void elfhook_forward_closefrom(int lowest) {
  void (*through)(int) = elfhook_next(ELFHOOK_CLOSEFROM);
  if (lowest >= 0 && !closing_range((unsigned)lowest, UINT32_MAX)) through = elfhook_route(ELFHOOK_CLOSEFROM, CALLER);
  if (through) through(lowest);
}

/* The exported names. */
extern __typeof(read) read __attribute__((alias("elfhook_forward_read"), visibility("default")));
extern __typeof(readv) readv __attribute__((alias("elfhook_forward_readv"), visibility("default")));
extern __typeof(recv) recv __attribute__((alias("elfhook_forward_recv"), visibility("default")));
extern __typeof(recvfrom) recvfrom __attribute__((alias("elfhook_forward_recvfrom"), visibility("default")));
extern __typeof(recvmsg) recvmsg __attribute__((alias("elfhook_forward_recvmsg"), visibility("default")));
extern __typeof(write) write __attribute__((alias("elfhook_forward_write"), visibility("default")));
extern __typeof(writev) writev __attribute__((alias("elfhook_forward_writev"), visibility("default")));
extern __typeof(send) send __attribute__((alias("elfhook_forward_send"), visibility("default")));
extern __typeof(sendto) sendto __attribute__((alias("elfhook_forward_sendto"), visibility("default")));
extern __typeof(sendmsg) sendmsg __attribute__((alias("elfhook_forward_sendmsg"), visibility("default")));
extern __typeof(sendfile) sendfile __attribute__((alias("elfhook_forward_sendfile"), visibility("default")));
extern __typeof(sendfile64) sendfile64 __attribute__((alias("elfhook_forward_sendfile64"), visibility("default")));
extern __typeof(close) close __attribute__((alias("elfhook_forward_close"), visibility("default")));
extern __typeof(getsockopt) getsockopt __attribute__((alias("elfhook_forward_getsockopt"), visibility("default")));
extern __typeof(dup2) dup2 __attribute__((alias("elfhook_forward_dup2"), visibility("default")));
extern __typeof(dup3) dup3 __attribute__((alias("elfhook_forward_dup3"), visibility("default")));
extern int close_range(unsigned, unsigned, int) __attribute__((alias("elfhook_forward_close_range"),
                                                               visibility("default")));
extern void closefrom(int) __attribute__((alias("elfhook_forward_closefrom"), visibility("default")));
