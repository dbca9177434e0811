/* The calls that close a descriptor without close(2): dup2 and dup3 onto a descriptor that is
 * open, close_range and closefrom. A tracked connection among the descriptors they close is
 * recorded first, as close records it (cnm_on_close, which keeps errno): left tracked, its
 * descriptor number would live on, and the bytes of the file or pipe that reuses it would be
 * counted (and parsed) as the connection's.
 *
 * None of them is on the data path: for a descriptor that is not a tracked connection, dup2 and
 * dup3 cost a bounds check and a byte load; close_range and closefrom scan the table's bytes for
 * their range, eight at a time. A vfork child (Python's subprocess closes its descriptors with
 * close_range before its exec) leaves its parent's table alone: cnm_in_vfork_child. */
#include "cnetmonitor.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>

#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif

static inline bool tracked(unsigned fd) {
  return fd < __atomic_load_n(&cnm_capacity, __ATOMIC_ACQUIRE) && cnm_tracked[fd];
}

/* dup2 and dup3 close `replaced` only when they succeed: when `source` is an open descriptor
 * other than it (fcntl keeps errno when it succeeds; when it fails, the call fails too, with its
 * own errno). */
static void before_replacing(int source, int replaced) {
  if (replaced < 0 || source == replaced || !tracked((unsigned)replaced)) return;
  int saved = errno;
  if (!cnm_in_vfork_child() && fcntl(source, F_GETFD) != -1) cnm_on_close(replaced);
  errno = saved;
}

int cnm_hook_dup2(int source, int replaced) {
  before_replacing(source, replaced);
  return cnm_originals.dup2(source, replaced);
}

int cnm_hook_dup3(int source, int replaced, int flags) {
  before_replacing(source, replaced);
  return cnm_originals.dup3(source, replaced, flags);
}

/* Records every tracked connection on a descriptor in first…last. */
static void before_closing(unsigned first, unsigned last) {
  uint32_t capacity = __atomic_load_n(&cnm_capacity, __ATOMIC_ACQUIRE);
  if (first >= capacity || first > last || cnm_in_vfork_child()) return;
  if (last >= capacity) last = capacity - 1;
  unsigned fd = first;
  while (fd <= last) {
    if (fd % 8 == 0 && last - fd >= 7) {
      uint64_t eight;
      memcpy(&eight, cnm_tracked + fd, sizeof eight);
      if (eight == 0) {
        fd += 8;
        continue;
      }
    }
    if (cnm_tracked[fd]) cnm_on_close((int)fd);
    fd++;
  }
}

int cnm_hook_close_range(unsigned first, unsigned last, int flags) {
  /* CLOSE_RANGE_CLOEXEC only marks them: they close at an exec, where the table goes too. */
  if (!(flags & CLOSE_RANGE_CLOEXEC)) before_closing(first, last);
  return cnm_originals.close_range(first, last, flags);
}

void cnm_hook_closefrom(int lowest) {
  if (lowest >= 0) before_closing((unsigned)lowest, UINT_MAX);
  cnm_originals.closefrom(lowest);
}

static void *const descriptor_hooks[] = {
    (void *)cnm_hook_dup2,
    (void *)cnm_hook_dup3,
    (void *)cnm_hook_close_range,
    (void *)cnm_hook_closefrom,
};

size_t cnm_descriptor_hook_count(void) { return sizeof descriptor_hooks / sizeof descriptor_hooks[0]; }
void *cnm_descriptor_hook(size_t index) {
  return index < cnm_descriptor_hook_count() ? descriptor_hooks[index] : NULL;
}
