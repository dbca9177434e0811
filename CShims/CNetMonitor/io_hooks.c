/* The data-path hooks (see cnetmonitor.h).
 *
 * Each hook first asks whether its descriptor is a tracked connection (a bounds check and one
 * byte load); if not, it jumps straight to the original through the pointer the engine saved: no
 * stack frame, nothing else. On x86_64 that test is written in assembly, because SwiftPM compiles C
 * with frame pointers, and the prologue and epilogue alone would add a third to the cost of every
 * call the process makes; elsewhere it is the same test in C. A tracked connection goes to the
 * `tracked_*` function, which calls the original, then counts the bytes itself when Swift does not
 * need to see them (`cnm_connection_head`), or hands them to the Swift slow path.
 *
 * errno is the original's: nothing here touches it, and the slow path restores it where it could
 * change it. Whether a descriptor is a tracked connection cannot change during the call: only
 * connect/accept on a new descriptor starts tracking it. */
#include "cnetmonitor.h"

cnm_traffic_callback cnm_on_received;
cnm_traffic_callback cnm_on_sent;

#define SLOT(fd) ((void *)(cnm_states + (size_t)(fd) * cnm_slot_size))

/* Counts the bytes in C when Swift has nothing to do with them; else hands them to Swift (which
 * also binds the socket to the SSL call running on this thread, when there is one). A call that
 * moved nothing (an error, EAGAIN, end of stream) is nobody's business here. */
static inline void account(int fd, bool received, const void *buffer, const struct iovec *vector, int vector_count,
                           ssize_t result) {
  if (result <= 0) return;
  cnm_connection_head *head = SLOT(fd);
  uint8_t watched = received ? head->watch_received : head->watch_sent;
  if (!watched && (head->is_tls || !cnm_current_ssl)) {
    __atomic_fetch_add(received ? &head->bytes_received : &head->bytes_sent, (uint64_t)result, __ATOMIC_RELAXED);
  } else {
    (received ? cnm_on_received : cnm_on_sent)(SLOT(fd), buffer, vector, vector_count, result);
  }
}

/* ---- tracked connections ------------------------------------------------------------------------ */

#define TRACKED_PATH __attribute__((used, noinline)) static ssize_t

TRACKED_PATH tracked_read(int fd, void *buffer, size_t count) {
  ssize_t result = cnm_originals.read(fd, buffer, count);
  account(fd, true, buffer, NULL, 0, result);
  return result;
}

TRACKED_PATH tracked_readv(int fd, const struct iovec *vector, int count) {
  ssize_t result = cnm_originals.readv(fd, vector, count);
  account(fd, true, NULL, vector, count, result);
  return result;
}

/* MSG_PEEK leaves the bytes in the socket: they are counted when they are read for real. */
TRACKED_PATH tracked_recv(int fd, void *buffer, size_t count, int flags) {
  ssize_t result = cnm_originals.recv(fd, buffer, count, flags);
  if (!(flags & MSG_PEEK)) account(fd, true, buffer, NULL, 0, result);
  return result;
}

TRACKED_PATH tracked_recvfrom(int fd, void *buffer, size_t count, int flags, struct sockaddr *address,
                              socklen_t *length) {
  ssize_t result = cnm_originals.recvfrom(fd, buffer, count, flags, address, length);
  if (!(flags & MSG_PEEK)) account(fd, true, buffer, NULL, 0, result);
  return result;
}

TRACKED_PATH tracked_recvmsg(int fd, struct msghdr *message, int flags) {
  ssize_t result = cnm_originals.recvmsg(fd, message, flags);
  if (!(flags & MSG_PEEK) && message) account(fd, true, NULL, message->msg_iov, (int)message->msg_iovlen, result);
  return result;
}

TRACKED_PATH tracked_write(int fd, const void *buffer, size_t count) {
  ssize_t result = cnm_originals.write(fd, buffer, count);
  account(fd, false, buffer, NULL, 0, result);
  return result;
}

TRACKED_PATH tracked_writev(int fd, const struct iovec *vector, int count) {
  ssize_t result = cnm_originals.writev(fd, vector, count);
  account(fd, false, NULL, vector, count, result);
  return result;
}

TRACKED_PATH tracked_send(int fd, const void *buffer, size_t count, int flags) {
  ssize_t result = cnm_originals.send(fd, buffer, count, flags);
  account(fd, false, buffer, NULL, 0, result);
  return result;
}

TRACKED_PATH tracked_sendto(int fd, const void *buffer, size_t count, int flags, const struct sockaddr *address,
                            socklen_t length) {
  ssize_t result = cnm_originals.sendto(fd, buffer, count, flags, address, length);
  account(fd, false, buffer, NULL, 0, result);
  return result;
}

TRACKED_PATH tracked_sendmsg(int fd, const struct msghdr *message, int flags) {
  ssize_t result = cnm_originals.sendmsg(fd, message, flags);
  if (message) account(fd, false, NULL, message->msg_iov, (int)message->msg_iovlen, result);
  return result;
}

/* The bytes come from a file, not from memory: they are counted, their content is not seen. */
TRACKED_PATH tracked_sendfile(int out_fd, int in_fd, off_t *offset, size_t count) {
  ssize_t result = cnm_originals.sendfile(out_fd, in_fd, offset, count);
  account(out_fd, false, NULL, NULL, 0, result);
  return result;
}

TRACKED_PATH tracked_sendfile64(int out_fd, int in_fd, off_t *offset, size_t count) {
  ssize_t result = cnm_originals.sendfile64(out_fd, in_fd, offset, count);
  account(out_fd, false, NULL, NULL, 0, result);
  return result;
}

/* ---- every call: is the descriptor (always the first argument) a tracked connection? ----------- */

#if defined(__x86_64__)

/* cmp the bound; load the table; test the byte; jump to the tracked path or to the original.
 * The arguments are still in their registers, so both jumps are tail calls. */
#define HOOK(name, index)                                                                                  \
  __asm__(".text\n"                                                                                        \
          ".globl cnm_hook_" #name "\n"                                                                    \
          ".type cnm_hook_" #name ", @function\n"                                                          \
          ".p2align 4\n"                                                                                   \
          "cnm_hook_" #name ":\n"                                                                          \
          "  cmpl cnm_capacity(%rip), %edi\n"                                                              \
          "  jae 1f\n"                                                                                     \
          "  movq cnm_tracked(%rip), %rax\n"                                                               \
          "  movslq %edi, %r11\n"                                                                          \
          "  cmpb $0, (%rax,%r11)\n"                                                                       \
          "  jne tracked_" #name "\n"                                                                      \
          "1:\n"                                                                                           \
          "  jmpq *cnm_originals+" #index "*8(%rip)\n"                                                     \
          ".size cnm_hook_" #name ", .-cnm_hook_" #name "\n")

#else

#define HOOK_TRACKED(fd) __builtin_expect((unsigned)(fd) < cnm_capacity && cnm_tracked[fd], 0)

#endif

#if defined(__x86_64__)
HOOK(read, 0);
HOOK(readv, 1);
HOOK(recv, 2);
HOOK(recvfrom, 3);
HOOK(recvmsg, 4);
HOOK(write, 5);
HOOK(writev, 6);
HOOK(send, 7);
HOOK(sendto, 8);
HOOK(sendmsg, 9);
HOOK(sendfile, 10);
HOOK(sendfile64, 11);
#else
ssize_t cnm_hook_read(int fd, void *buffer, size_t count) {
  return HOOK_TRACKED(fd) ? tracked_read(fd, buffer, count) : cnm_originals.read(fd, buffer, count);
}
ssize_t cnm_hook_readv(int fd, const struct iovec *vector, int count) {
  return HOOK_TRACKED(fd) ? tracked_readv(fd, vector, count) : cnm_originals.readv(fd, vector, count);
}
ssize_t cnm_hook_recv(int fd, void *buffer, size_t count, int flags) {
  return HOOK_TRACKED(fd) ? tracked_recv(fd, buffer, count, flags) : cnm_originals.recv(fd, buffer, count, flags);
}
ssize_t cnm_hook_recvfrom(int fd, void *buffer, size_t count, int flags, struct sockaddr *address,
                          socklen_t *length) {
  return HOOK_TRACKED(fd) ? tracked_recvfrom(fd, buffer, count, flags, address, length)
                          : cnm_originals.recvfrom(fd, buffer, count, flags, address, length);
}
ssize_t cnm_hook_recvmsg(int fd, struct msghdr *message, int flags) {
  return HOOK_TRACKED(fd) ? tracked_recvmsg(fd, message, flags) : cnm_originals.recvmsg(fd, message, flags);
}
ssize_t cnm_hook_write(int fd, const void *buffer, size_t count) {
  return HOOK_TRACKED(fd) ? tracked_write(fd, buffer, count) : cnm_originals.write(fd, buffer, count);
}
ssize_t cnm_hook_writev(int fd, const struct iovec *vector, int count) {
  return HOOK_TRACKED(fd) ? tracked_writev(fd, vector, count) : cnm_originals.writev(fd, vector, count);
}
ssize_t cnm_hook_send(int fd, const void *buffer, size_t count, int flags) {
  return HOOK_TRACKED(fd) ? tracked_send(fd, buffer, count, flags) : cnm_originals.send(fd, buffer, count, flags);
}
ssize_t cnm_hook_sendto(int fd, const void *buffer, size_t count, int flags, const struct sockaddr *address,
                        socklen_t length) {
  return HOOK_TRACKED(fd) ? tracked_sendto(fd, buffer, count, flags, address, length)
                          : cnm_originals.sendto(fd, buffer, count, flags, address, length);
}
ssize_t cnm_hook_sendmsg(int fd, const struct msghdr *message, int flags) {
  return HOOK_TRACKED(fd) ? tracked_sendmsg(fd, message, flags) : cnm_originals.sendmsg(fd, message, flags);
}
ssize_t cnm_hook_sendfile(int out_fd, int in_fd, off_t *offset, size_t count) {
  return HOOK_TRACKED(out_fd) ? tracked_sendfile(out_fd, in_fd, offset, count)
                              : cnm_originals.sendfile(out_fd, in_fd, offset, count);
}
ssize_t cnm_hook_sendfile64(int out_fd, int in_fd, off_t *offset, size_t count) {
  return HOOK_TRACKED(out_fd) ? tracked_sendfile64(out_fd, in_fd, offset, count)
                              : cnm_originals.sendfile64(out_fd, in_fd, offset, count);
}
#endif

static const unsigned char zero_bytes[cnm_zero_byte_count];
const void *cnm_zero_bytes(void) { return zero_bytes; }

static void *const data_path_hooks[] = {
    (void *)cnm_hook_read,    (void *)cnm_hook_readv,   (void *)cnm_hook_recv,   (void *)cnm_hook_recvfrom,
    (void *)cnm_hook_recvmsg, (void *)cnm_hook_write,   (void *)cnm_hook_writev, (void *)cnm_hook_send,
    (void *)cnm_hook_sendto,  (void *)cnm_hook_sendmsg, (void *)cnm_hook_sendfile, (void *)cnm_hook_sendfile64,
};

size_t cnm_data_path_hook_count(void) { return sizeof data_path_hooks / sizeof data_path_hooks[0]; }
void *cnm_data_path_hook(size_t index) {
  return index < cnm_data_path_hook_count() ? data_path_hooks[index] : NULL;
}
