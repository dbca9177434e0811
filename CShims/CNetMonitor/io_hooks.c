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
cnm_close_callback cnm_on_close;

#define SLOT(fd) ((void *)(cnm_states + (size_t)(fd) * cnm_slot_size))

/* Whether the connection's replay is under way (exchange_replay.c). */
static inline bool replaying(const cnm_connection_head *head) {
  return (__atomic_load_n(&head->replay_state, __ATOMIC_RELAXED) & CNM_REPLAY_PHASE) != CNM_REPLAY_OFF;
}

/* The bytes of a call on a watched direction: the replay's while it is under way (part of a
 * repeated exchange, or handed on to Swift); HTTP/2's when the direction is read here (but for
 * sendfile's, whose content is not in memory, and for bytes moving inside an SSL call, which bind
 * the socket to it); else Swift's. Out of line, so that the counting path saves no more registers;
 * every way is a tail call. */
__attribute__((noinline)) static void watched_bytes(cnm_connection_head *head, bool received, const void *buffer,
                                                    const struct iovec *vector, int vector_count, ssize_t result) {
  uint8_t watch = received ? head->watch_received : head->watch_sent;
  if (replaying(head)) {
    cnm_replay_take(head, received, buffer, vector, vector_count, result);
  } else if (watch >= CNM_WATCH_H2_REQUESTS && (buffer || vector) && !cnm_current_ssl) {
    cnm_h2_read(head, received, watch == CNM_WATCH_H2_REQUESTS, buffer, vector, vector_count, result);
  } else {
    cnm_hand_to_swift(head, received, buffer, vector, vector_count, result);
  }
}

/* Counts the bytes in C when Swift has nothing to do with them; else `watched_bytes`. A call that
 * moved nothing (an error, EAGAIN, end of stream) is nobody's business here. */
static inline void account(int fd, bool received, const void *buffer, const struct iovec *vector, int vector_count,
                           ssize_t result) {
  if (result <= 0) return;
  cnm_connection_head *head = SLOT(fd);
  uint8_t watched = received ? head->watch_received : head->watch_sent;
  if (!watched && (head->is_tls || !cnm_current_ssl)) {
    cnm_count_bytes(head, received, (uint64_t)result);
  } else {
    watched_bytes(head, received, buffer, vector, vector_count, result);
  }
}

void cnm_account_call(int fd, bool received, const void *buffer, const struct iovec *vector, int vector_count,
                      ssize_t result) {
  account(fd, received, buffer, vector, vector_count, result);
}

void cnm_account_tracked_call(int fd, bool received, const void *buffer, const struct iovec *vector,
                              int vector_count, ssize_t result) {
  if ((unsigned)fd < __atomic_load_n(&cnm_capacity, __ATOMIC_ACQUIRE) && cnm_tracked[fd])
    account(fd, received, buffer, vector, vector_count, result);
}

/* ---- connections carrying exchanges: their lines prefetched, then the tracked path --------------
 * The misses the slow path would take one after another after the call are served while the
 * kernel works (cnetmonitor.h). preserve_most: the call keeps every argument register, so this
 * path costs the prefetches and a jump more than the tracked one. */

#if defined(__x86_64__) && defined(__clang__)
#define PRESERVE_ARGUMENTS __attribute__((preserve_most))
#else
#define PRESERVE_ARGUMENTS
#endif

__attribute__((noinline)) PRESERVE_ARGUMENTS static void prefetch_exchange(int fd) {
  const unsigned char *entry = SLOT(fd);
  for (uint32_t i = 0; i < cnm_exchange_lines.entry_count; i++)
    __builtin_prefetch(entry + cnm_exchange_lines.entry[i], 1, 3);
  cnm_queue *records = cnm_records;
  if (records) cnm_queue_prefetch_next(records, cnm_exchange_lines.record, cnm_exchange_lines.record_count);
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

/* A tracked connection's record is made before the descriptor goes (cnm_on_close keeps errno);
 * not by a vfork child, which closes its own copy (cnm_in_vfork_child). */
__attribute__((used, noinline)) static int tracked_close(int fd) {
  if (!cnm_in_vfork_child()) cnm_on_close(fd);
  return cnm_originals.close(fd);
}

/* The same paths for a CNM_EXCHANGING connection: its exchange's lines prefetched first. Only the
 * calls that receive: the call that brings a request (to a server) or a response (to a client) is
 * the first of its exchange, after the other connections' work evicted the lines. The calls that
 * send come right after it, with the lines still cached: prefetching there again cost ~100
 * instructions a request, and filled the miss buffers just as the kernel copies the bytes. */
#define EXCHANGING_PATH(name, parameters, arguments)                         \
  __attribute__((used, noinline)) static ssize_t exchanging_##name parameters { \
    prefetch_exchange(fd);                                                   \
    return tracked_##name arguments;                                         \
  }

EXCHANGING_PATH(read, (int fd, void *buffer, size_t count), (fd, buffer, count))
EXCHANGING_PATH(readv, (int fd, const struct iovec *vector, int count), (fd, vector, count))
EXCHANGING_PATH(recv, (int fd, void *buffer, size_t count, int flags), (fd, buffer, count, flags))
EXCHANGING_PATH(recvfrom, (int fd, void *buffer, size_t count, int flags, struct sockaddr *address, socklen_t *length),
                (fd, buffer, count, flags, address, length))
EXCHANGING_PATH(recvmsg, (int fd, struct msghdr *message, int flags), (fd, message, flags))

/* ---- every call: is the descriptor (always the first argument) a tracked connection? ----------- */

#if defined(__x86_64__)

/* cmp the bound; load the table; compare the byte with CNM_TRACKED: equal, the tracked path;
 * above (CNM_EXCHANGING), the path that prefetches first; below (0), the original. The arguments
 * are still in their registers, so every jump is a tail call. A sending hook has no prefetching
 * path: any nonzero byte goes to the tracked one. */
#define HOOK_DISPATCH(name, index, tracked_jumps)                                                          \
  __asm__(".text\n"                                                                                        \
          ".globl cnm_hook_" #name "\n"                                                                    \
          ".type cnm_hook_" #name ", @function\n"                                                          \
          ".p2align 4\n"                                                                                   \
          "cnm_hook_" #name ":\n"                                                                          \
          "  cmpl cnm_capacity(%rip), %edi\n"                                                              \
          "  jae 1f\n"                                                                                     \
          "  movq cnm_tracked(%rip), %rax\n"                                                               \
          "  movslq %edi, %r11\n" tracked_jumps "1:\n"                                                     \
          "  jmpq *cnm_originals+" #index "*8(%rip)\n"                                                     \
          ".size cnm_hook_" #name ", .-cnm_hook_" #name "\n")
#define RECEIVING_HOOK(name, index) \
  HOOK_DISPATCH(name, index, "  cmpb $1, (%rax,%r11)\n  je tracked_" #name "\n  ja exchanging_" #name "\n")
#define SENDING_HOOK(name, index) HOOK_DISPATCH(name, index, "  cmpb $0, (%rax,%r11)\n  jne tracked_" #name "\n")

#else

#define HOOK_TRACKED(fd) __builtin_expect((unsigned)(fd) < cnm_capacity && cnm_tracked[fd], 0)
#define RECEIVING_PATH(name, fd) (cnm_tracked[fd] == CNM_EXCHANGING ? exchanging_##name : tracked_##name)
#define SENDING_PATH(name, fd) tracked_##name

#endif

#if defined(__x86_64__)
RECEIVING_HOOK(read, 0);
RECEIVING_HOOK(readv, 1);
RECEIVING_HOOK(recv, 2);
RECEIVING_HOOK(recvfrom, 3);
RECEIVING_HOOK(recvmsg, 4);
SENDING_HOOK(write, 5);
SENDING_HOOK(writev, 6);
SENDING_HOOK(send, 7);
SENDING_HOOK(sendto, 8);
SENDING_HOOK(sendmsg, 9);
SENDING_HOOK(sendfile, 10);
SENDING_HOOK(sendfile64, 11);
SENDING_HOOK(close, 12); /* as the sending ones: any tracked descriptor takes its tracked path */
#else
ssize_t cnm_hook_read(int fd, void *buffer, size_t count) {
  return HOOK_TRACKED(fd) ? RECEIVING_PATH(read, fd)(fd, buffer, count) : cnm_originals.read(fd, buffer, count);
}
ssize_t cnm_hook_readv(int fd, const struct iovec *vector, int count) {
  return HOOK_TRACKED(fd) ? RECEIVING_PATH(readv, fd)(fd, vector, count) : cnm_originals.readv(fd, vector, count);
}
ssize_t cnm_hook_recv(int fd, void *buffer, size_t count, int flags) {
  return HOOK_TRACKED(fd) ? RECEIVING_PATH(recv, fd)(fd, buffer, count, flags)
                          : cnm_originals.recv(fd, buffer, count, flags);
}
ssize_t cnm_hook_recvfrom(int fd, void *buffer, size_t count, int flags, struct sockaddr *address,
                          socklen_t *length) {
  return HOOK_TRACKED(fd) ? RECEIVING_PATH(recvfrom, fd)(fd, buffer, count, flags, address, length)
                          : cnm_originals.recvfrom(fd, buffer, count, flags, address, length);
}
ssize_t cnm_hook_recvmsg(int fd, struct msghdr *message, int flags) {
  return HOOK_TRACKED(fd) ? RECEIVING_PATH(recvmsg, fd)(fd, message, flags)
                          : cnm_originals.recvmsg(fd, message, flags);
}
ssize_t cnm_hook_write(int fd, const void *buffer, size_t count) {
  return HOOK_TRACKED(fd) ? SENDING_PATH(write, fd)(fd, buffer, count) : cnm_originals.write(fd, buffer, count);
}
ssize_t cnm_hook_writev(int fd, const struct iovec *vector, int count) {
  return HOOK_TRACKED(fd) ? SENDING_PATH(writev, fd)(fd, vector, count)
                          : cnm_originals.writev(fd, vector, count);
}
ssize_t cnm_hook_send(int fd, const void *buffer, size_t count, int flags) {
  return HOOK_TRACKED(fd) ? SENDING_PATH(send, fd)(fd, buffer, count, flags)
                          : cnm_originals.send(fd, buffer, count, flags);
}
ssize_t cnm_hook_sendto(int fd, const void *buffer, size_t count, int flags, const struct sockaddr *address,
                        socklen_t length) {
  return HOOK_TRACKED(fd) ? SENDING_PATH(sendto, fd)(fd, buffer, count, flags, address, length)
                          : cnm_originals.sendto(fd, buffer, count, flags, address, length);
}
ssize_t cnm_hook_sendmsg(int fd, const struct msghdr *message, int flags) {
  return HOOK_TRACKED(fd) ? SENDING_PATH(sendmsg, fd)(fd, message, flags)
                          : cnm_originals.sendmsg(fd, message, flags);
}
ssize_t cnm_hook_sendfile(int out_fd, int in_fd, off_t *offset, size_t count) {
  return HOOK_TRACKED(out_fd) ? SENDING_PATH(sendfile, out_fd)(out_fd, in_fd, offset, count)
                              : cnm_originals.sendfile(out_fd, in_fd, offset, count);
}
ssize_t cnm_hook_sendfile64(int out_fd, int in_fd, off_t *offset, size_t count) {
  return HOOK_TRACKED(out_fd) ? SENDING_PATH(sendfile64, out_fd)(out_fd, in_fd, offset, count)
                              : cnm_originals.sendfile64(out_fd, in_fd, offset, count);
}
int cnm_hook_close(int fd) { return HOOK_TRACKED(fd) ? tracked_close(fd) : cnm_originals.close(fd); }
#endif

static const unsigned char zero_bytes[cnm_zero_byte_count];
const void *cnm_zero_bytes(void) { return zero_bytes; }

static void *const data_path_hooks[] = {
    (void *)cnm_hook_read,    (void *)cnm_hook_readv,   (void *)cnm_hook_recv,   (void *)cnm_hook_recvfrom,
    (void *)cnm_hook_recvmsg, (void *)cnm_hook_write,   (void *)cnm_hook_writev, (void *)cnm_hook_send,
    (void *)cnm_hook_sendto,  (void *)cnm_hook_sendmsg, (void *)cnm_hook_sendfile, (void *)cnm_hook_sendfile64,
    (void *)cnm_hook_close,
};

size_t cnm_data_path_hook_count(void) { return sizeof data_path_hooks / sizeof data_path_hooks[0]; }
void *cnm_data_path_hook(size_t index) {
  return index < cnm_data_path_hook_count() ? data_path_hooks[index] : NULL;
}
