/* The data-path hooks (see cnetmonitor.h): call the original through the pointer the engine
 * saved, then hand tracked connections to the Swift slow path. errno is the original's: nothing
 * here touches it, and the slow path restores it where it could change it. */
#include "cnetmonitor.h"

cnm_traffic_callback cnm_on_received;
cnm_traffic_callback cnm_on_sent;

#define TRACKED(fd) __builtin_expect((unsigned)(fd) < cnm_capacity && cnm_tracked[fd], 0)
#define SLOT(fd) ((void *)(cnm_states + (size_t)(fd) * cnm_slot_size))
#define HEAD(fd) ((cnm_connection_head *)SLOT(fd))

/* Counts the bytes in C when Swift has nothing to do with them; else hands them to Swift (which
 * also binds the socket to the SSL call running on this thread, when there is one). */
#define ACCOUNT(fd, direction, callback, buffer, vector, vector_count, result)                             \
  do {                                                                                                     \
    cnm_connection_head *head_ = HEAD(fd);                                                                 \
    if ((result) > 0 && !head_->watch_##direction && (head_->is_tls || !cnm_current_ssl))                  \
      __atomic_fetch_add(&head_->bytes_##direction, (uint64_t)(result), __ATOMIC_RELAXED);                 \
    else                                                                                                   \
      callback(SLOT(fd), buffer, vector, vector_count, result);                                            \
  } while (0)

static __attribute__((noinline)) ssize_t tracked_read(int fd, void *buffer, size_t count) {
  ssize_t result = cnm_originals.read(fd, buffer, count);
  ACCOUNT(fd, received, cnm_on_received, buffer, NULL, 0, result);
  return result;
}

ssize_t cnm_hook_read(int fd, void *buffer, size_t count) {
  if (!TRACKED(fd)) return cnm_originals.read(fd, buffer, count);
  return tracked_read(fd, buffer, count);
}

static __attribute__((noinline)) ssize_t tracked_readv(int fd, const struct iovec *vector, int count) {
  ssize_t result = cnm_originals.readv(fd, vector, count);
  ACCOUNT(fd, received, cnm_on_received, NULL, vector, count, result);
  return result;
}

ssize_t cnm_hook_readv(int fd, const struct iovec *vector, int count) {
  if (!TRACKED(fd)) return cnm_originals.readv(fd, vector, count);
  return tracked_readv(fd, vector, count);
}

/* MSG_PEEK leaves the bytes in the socket: they are counted when they are read for real. */
static __attribute__((noinline)) ssize_t tracked_recv(int fd, void *buffer, size_t count, int flags) {
  ssize_t result = cnm_originals.recv(fd, buffer, count, flags);
  ACCOUNT(fd, received, cnm_on_received, buffer, NULL, 0, result);
  return result;
}

ssize_t cnm_hook_recv(int fd, void *buffer, size_t count, int flags) {
  if (!TRACKED(fd) || (flags & MSG_PEEK)) return cnm_originals.recv(fd, buffer, count, flags);
  return tracked_recv(fd, buffer, count, flags);
}

static __attribute__((noinline)) ssize_t tracked_recvfrom(int fd, void *buffer, size_t count, int flags, struct sockaddr *address,
                          socklen_t *length) {
  ssize_t result = cnm_originals.recvfrom(fd, buffer, count, flags, address, length);
  ACCOUNT(fd, received, cnm_on_received, buffer, NULL, 0, result);
  return result;
}

ssize_t cnm_hook_recvfrom(int fd, void *buffer, size_t count, int flags, struct sockaddr *address,
                          socklen_t *length) {
  if (!TRACKED(fd) || (flags & MSG_PEEK)) return cnm_originals.recvfrom(fd, buffer, count, flags, address, length);
  return tracked_recvfrom(fd, buffer, count, flags, address, length);
}

static __attribute__((noinline)) ssize_t tracked_recvmsg(int fd, struct msghdr *message, int flags) {
  ssize_t result = cnm_originals.recvmsg(fd, message, flags);
  ACCOUNT(fd, received, cnm_on_received, NULL, message->msg_iov, (int)message->msg_iovlen, result);
  return result;
}

ssize_t cnm_hook_recvmsg(int fd, struct msghdr *message, int flags) {
  if (!TRACKED(fd) || (flags & MSG_PEEK) || !message) return cnm_originals.recvmsg(fd, message, flags);
  return tracked_recvmsg(fd, message, flags);
}

static __attribute__((noinline)) ssize_t tracked_write(int fd, const void *buffer, size_t count) {
  ssize_t result = cnm_originals.write(fd, buffer, count);
  ACCOUNT(fd, sent, cnm_on_sent, buffer, NULL, 0, result);
  return result;
}

ssize_t cnm_hook_write(int fd, const void *buffer, size_t count) {
  if (!TRACKED(fd)) return cnm_originals.write(fd, buffer, count);
  return tracked_write(fd, buffer, count);
}

static __attribute__((noinline)) ssize_t tracked_writev(int fd, const struct iovec *vector, int count) {
  ssize_t result = cnm_originals.writev(fd, vector, count);
  ACCOUNT(fd, sent, cnm_on_sent, NULL, vector, count, result);
  return result;
}

ssize_t cnm_hook_writev(int fd, const struct iovec *vector, int count) {
  if (!TRACKED(fd)) return cnm_originals.writev(fd, vector, count);
  return tracked_writev(fd, vector, count);
}

static __attribute__((noinline)) ssize_t tracked_send(int fd, const void *buffer, size_t count, int flags) {
  ssize_t result = cnm_originals.send(fd, buffer, count, flags);
  ACCOUNT(fd, sent, cnm_on_sent, buffer, NULL, 0, result);
  return result;
}

ssize_t cnm_hook_send(int fd, const void *buffer, size_t count, int flags) {
  if (!TRACKED(fd)) return cnm_originals.send(fd, buffer, count, flags);
  return tracked_send(fd, buffer, count, flags);
}

static __attribute__((noinline)) ssize_t tracked_sendto(int fd, const void *buffer, size_t count, int flags, const struct sockaddr *address,
                        socklen_t length) {
  ssize_t result = cnm_originals.sendto(fd, buffer, count, flags, address, length);
  ACCOUNT(fd, sent, cnm_on_sent, buffer, NULL, 0, result);
  return result;
}

ssize_t cnm_hook_sendto(int fd, const void *buffer, size_t count, int flags, const struct sockaddr *address,
                        socklen_t length) {
  if (!TRACKED(fd)) return cnm_originals.sendto(fd, buffer, count, flags, address, length);
  return tracked_sendto(fd, buffer, count, flags, address, length);
}

static __attribute__((noinline)) ssize_t tracked_sendmsg(int fd, const struct msghdr *message, int flags) {
  ssize_t result = cnm_originals.sendmsg(fd, message, flags);
  ACCOUNT(fd, sent, cnm_on_sent, NULL, message->msg_iov, (int)message->msg_iovlen, result);
  return result;
}

ssize_t cnm_hook_sendmsg(int fd, const struct msghdr *message, int flags) {
  if (!TRACKED(fd) || !message) return cnm_originals.sendmsg(fd, message, flags);
  return tracked_sendmsg(fd, message, flags);
}

static __attribute__((noinline)) ssize_t tracked_sendfile(int out_fd, int in_fd, off_t *offset, size_t count) {
  ssize_t result = cnm_originals.sendfile(out_fd, in_fd, offset, count);
  ACCOUNT(out_fd, sent, cnm_on_sent, NULL, NULL, 0, result);
  return result;
}

ssize_t cnm_hook_sendfile(int out_fd, int in_fd, off_t *offset, size_t count) {
  if (!TRACKED(out_fd)) return cnm_originals.sendfile(out_fd, in_fd, offset, count);
  return tracked_sendfile(out_fd, in_fd, offset, count);
}

static void *const data_path_hooks[] = {
    (void *)cnm_hook_read,    (void *)cnm_hook_readv,  (void *)cnm_hook_recv,   (void *)cnm_hook_recvfrom,
    (void *)cnm_hook_recvmsg, (void *)cnm_hook_write,  (void *)cnm_hook_writev, (void *)cnm_hook_send,
    (void *)cnm_hook_sendto,  (void *)cnm_hook_sendmsg, (void *)cnm_hook_sendfile,
};

size_t cnm_data_path_hook_count(void) { return sizeof data_path_hooks / sizeof data_path_hooks[0]; }
void *cnm_data_path_hook(size_t index) {
  return index < cnm_data_path_hook_count() ? data_path_hooks[index] : NULL;
}
