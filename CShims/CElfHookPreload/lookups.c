/* Name lookups made before the monitor is loaded (elfhook_preload.h).
 *
 * Many processes look a name up and never connect (`getent hosts`, `curl --version`, whose LDAP
 * library resolves the machine's own name): loading the monitor for one dns record would cost them
 * ~3 ms. So the injected library records lookups itself, in C, into the process's ring, created at
 * the first lookup with the memory of its first records only (its queue takes more as it fills);
 * and it remembers them (cnm_resolutions), so that the connections it records itself (clients.c),
 * and the monitor once loaded, know which host each address came from. The ring and the
 * resolutions are handed to the monitor when it starts (elfhook_lookups_handoff). */
#include "elfhook_preload.h"

#include "cnetmonitor.h"
#include "cnm_records.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <string.h>
#include <unistd.h>

enum { NO_RING, CREATING, READY, FAILED, HANDED_OVER };
static struct {
  int state;
  cnm_queue *queue;
  char path[PATH_MAX];
} ring = {NO_RING, NULL, ""};

cnm_queue *elfhook_ring(const elfhook_preload_configuration *configuration) {
  int state = __atomic_load_n(&ring.state, __ATOMIC_ACQUIRE);
  if (state == NO_RING &&
      __atomic_compare_exchange_n(&ring.state, &state, CREATING, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
    cnm_pid = (int32_t)getpid();
    elfhook_note_output_filesystem(configuration);
    ring.queue = cnm_ring_create(configuration->output, configuration->capacity, CNM_RECORD_SLOT_SIZE,
                                 CNM_RECORD_LAYOUT, CNM_RING_FIRST_RECORDS, ring.path, sizeof ring.path);
    if (!ring.queue && configuration->log != ELFHOOK_LOG_OFF && !elfhook_run_is_over(configuration)) {
      elfhook_say_unmonitored("cannot create the record file %s: %s", ring.path[0] ? ring.path : configuration->output,
                              strerror(errno));
    }
    state = ring.queue ? READY : FAILED;
    __atomic_store_n(&ring.state, state, __ATOMIC_RELEASE);
  }
  while (state == CREATING) {
    sched_yield();
    state = __atomic_load_n(&ring.state, __ATOMIC_ACQUIRE);
  }
  return state == READY ? ring.queue : NULL;
}

void elfhook_record_lookup(const elfhook_preload_configuration *configuration, const char *host, int status,
                           int system_errno, const struct addrinfo *answers, uint64_t start_unix_ns,
                           uint64_t duration_ns) {
  cnm_queue *queue = elfhook_ring(configuration);
  cnm_dns_record record;
  cnm_dns_record_fill(&record, host, status, system_errno, answers, start_unix_ns, duration_ns);
  cnm_resolutions_remember(&record, (uint64_t)pthread_self());
  if (queue) cnm_dns_record_emit(queue, &record);
}

void elfhook_lookups_handoff(cnm_handoff *handoff) {
  handoff->resolutions = cnm_resolutions_table(&handoff->resolutions_next_ticket);
  handoff->ring = NULL;
  handoff->ring_path = NULL;
  if (__atomic_load_n(&ring.state, __ATOMIC_ACQUIRE) != READY) return;
  handoff->ring = ring.queue;
  handoff->ring_path = ring.path;
}

bool elfhook_ring_failed(void) { return __atomic_load_n(&ring.state, __ATOMIC_ACQUIRE) == FAILED; }

void elfhook_lookups_handed_over(void) { __atomic_store_n(&ring.state, HANDED_OVER, __ATOMIC_RELEASE); }

void elfhook_lookups_after_fork_in_child(void) {
  cnm_pid = (int32_t)getpid();
  cnm_resolutions_after_fork();
  int state = __atomic_load_n(&ring.state, __ATOMIC_ACQUIRE);
  /* Handed over: the monitor's own fork handler gives the child its ring. Failed: said once. */
  if (state == HANDED_OVER || state == FAILED) return;
  if (state == READY) cnm_ring_unmap(ring.queue);
  ring.queue = NULL;
  ring.path[0] = 0;
  __atomic_store_n(&ring.state, NO_RING, __ATOMIC_RELEASE);
}
