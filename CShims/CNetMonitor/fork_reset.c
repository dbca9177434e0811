/* fork (cnetmonitor.h): a child records its own transactions, in a ring of its own. The parent's
 * connections stay in its table — a server that accepts and then forks serves each connection in
 * a child — but as the child's copies: their byte counts zeroed and marked inherited, so that the
 * child records one only when it moves bytes on it (`Traffic.closed`), and a child that merely
 * holds its parent's descriptors (until it execs or exits) records none of them; the hooks stop
 * recording their exchanges by themselves (a replay the parent armed). In the parent, the
 * connections open at the fork are marked, so that one it closes without having moved a byte on
 * it (a prefork server's accepted connection, handed to the child) is the child's to record, not
 * counted twice. The handlers run before fork returns, with only system calls that are safe. */
#include "cnetmonitor.h"
#include "cnm_records.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int32_t cnm_pid;

static struct {
  char pattern[PATH_MAX]; /* empty: records go to an in-process queue */
  size_t capacity, record_size;
  uint64_t record_layout;
} fork_configuration;

/* Every tracked descriptor is below this (0 before the table is set up). */
static uint32_t tracked_limit(void) {
  return __atomic_load_n(&cnm_capacity, __ATOMIC_ACQUIRE) == 0 ? 0 : cnm_get_tracked_limit();
}

static void inherit_connections(void) {
  uint32_t limit = tracked_limit();
  for (uint32_t fd = 0; fd < limit; fd++) {
    /* The child's exchanges go to Swift, which takes over what the parent left halfway and arms
     * the replay again for the child. */
    if (cnm_tracked[fd]) cnm_inherit_connection(cnm_slot((int)fd));
  }
  cnm_ssl_map_clear();
}

static void after_fork_in_parent(void) {
  uint32_t limit = tracked_limit();
  for (uint32_t fd = 0; fd < limit; fd++) {
    if (cnm_tracked[fd]) ((cnm_connection_head *)cnm_slot((int)fd))->forked_open = 1;
  }
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
  inherit_connections();
  cnm_h2_pool_after_fork();
  cnm_resolutions_after_fork();
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
    pthread_atfork(NULL, after_fork_in_parent, after_fork_in_child);
  }
}
