/* fork (cnetmonitor.h): a child records its own transactions, in a ring of its own, with a clean
 * connection table — the parent's connections are the parent's, even when the child holds their
 * descriptors. The handler runs in the child before fork returns, with only system calls that
 * are safe there. */
#include "cnetmonitor.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

int32_t cnm_pid;

static struct {
  char pattern[PATH_MAX]; /* empty: records go to an in-process queue */
  size_t capacity, record_size;
  uint64_t record_layout;
} fork_configuration;

static void forget_connections(void) {
  uint32_t capacity = __atomic_load_n(&cnm_capacity, __ATOMIC_ACQUIRE);
  if (capacity == 0) return;
  /* Private anonymous memory: MADV_DONTNEED gives zero pages back, without touching the pages
   * the parent never used. */
  madvise(cnm_tracked, capacity, MADV_DONTNEED);
  madvise(cnm_states, (size_t)capacity * cnm_slot_size, MADV_DONTNEED);
  cnm_tracked_limit = 0;
  cnm_ssl_map_clear();
}

static void switch_to_own_ring(void) {
  cnm_queue *inherited = cnm_records;
  cnm_records = NULL;
  if (inherited) cnm_ring_unmap(inherited);
  char path[PATH_MAX] = "";
  cnm_queue *ring = cnm_ring_create(fork_configuration.pattern, fork_configuration.capacity,
                                    fork_configuration.record_size, fork_configuration.record_layout,
                                    CNM_RING_FIRST_RECORDS, path, sizeof path);
  if (!ring) {
    /* Under `elfhook run` (ELFHOOK_RUN=1), a directory gone means the run ended and removed it:
     * the child of a process it left running says nothing (elfhook_run_is_over). */
    const char *run = getenv("ELFHOOK_RUN");
    if (errno == ENOENT && run && strcmp(run, "1") == 0) return;
    dprintf(STDERR_FILENO, "elfhook: cannot create the record file for child %d (%s): %m; it runs unmonitored\n",
            (int)getpid(), path);
    return;
  }
  cnm_records = ring;
}

static void after_fork_in_child(void) {
  cnm_pid = (int32_t)getpid();
  forget_connections();
  if (fork_configuration.pattern[0]) {
    switch_to_own_ring();
  } else {
    cnm_records = NULL; /* the recorder thread that consumed the queue was not forked */
  }
}

void cnm_fork_handling_set_up(const char *ring_pattern, size_t capacity, size_t record_size,
                              uint64_t record_layout) {
  cnm_pid = (int32_t)getpid();
  static bool installed;
  if (ring_pattern && strlen(ring_pattern) < sizeof fork_configuration.pattern) {
    strcpy(fork_configuration.pattern, ring_pattern);
    fork_configuration.capacity = capacity;
    fork_configuration.record_size = record_size;
    fork_configuration.record_layout = record_layout;
  }
  if (!installed) {
    installed = true;
    pthread_atfork(NULL, NULL, after_fork_in_child);
  }
}
