/* libhold.so: a send() that interposes libc's and, after the real send, waits for one byte on
 * hold_send_fd (when it is set): the caller's thread is held between the system call and the
 * return, as a preempted thread is. See split_thread_client.c. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <sys/socket.h>
#include <unistd.h>

int hold_send_fd = -1;

ssize_t send(int fd, const void *buffer, size_t length, int flags) {
  static ssize_t (*next)(int, const void *, size_t, int);
  if (!next) next = (ssize_t(*)(int, const void *, size_t, int))dlsym(RTLD_NEXT, "send");
  ssize_t sent = next(fd, buffer, length, flags);
  int saved = errno;
  char byte;
  if (hold_send_fd >= 0) while (read(hold_send_fd, &byte, 1) < 0 && errno == EINTR) {}
  errno = saved;
  return sent;
}
