/* Recent name resolutions (cnm_records.h): the getaddrinfo hook writes them, the connect hook
 * reads them, and neither ever waits for the other.
 *
 * A table of 64 entries, each under a sequence lock: its state word is odd-looking (WRITING) while
 * a writer fills it and advances a generation when it is done; a reader copies what it needs and
 * keeps the copy only when the state did not move meanwhile. No lock is ever held, so a connect
 * in a signal handler that interrupted a lookup, a fork child whose parent was mid-write, or a
 * thread descheduled in the middle of either costs at most an entry, never a join (the mutex this
 * replaced was only ever tried, and under 16 connecting threads on two cores a try failed often
 * enough to cost a connection its host name). Every field is read and written with relaxed atomic
 * operations, ordered by fences: the seqlock as C11 allows it (Boehm, "Can seqlocks get along with
 * programming language memory models?"). */
#include "cnetmonitor.h"
#include "cnm_records.h"

#include <netinet/in.h>
#include <string.h>

enum {
  ENTRIES = 64,
  HOST_WORDS = CNM_RESOLUTION_HOST_SIZE / 8,
  /* The state word: generation << 2 | WRITING | TIME_TAKEN. Generation 0: never written. */
  TIME_TAKEN = 1u,
  WRITING = 2u,
  GENERATION = 4u,
};

typedef struct {
  uint32_t state;
  uint64_t address[3]; /* the family, then the 16 address bytes (IPv4: 4 of them, then zeros) */
  uint64_t port; /* the service's port the lookup was given; 0 when none */
  uint64_t thread, lookup_ns, host_length;
  uint64_t host[HOST_WORDS];
} resolution;

static resolution table[ENTRIES];
static uint64_t next_ticket;

#define LOAD(field) __atomic_load_n(&(field), __ATOMIC_RELAXED)
#define STORE(field, value) __atomic_store_n(&(field), (value), __ATOMIC_RELAXED)

/* The address as the table keys it: an IPv4-mapped IPv6 address (`::ffff:127.0.0.1`, a
 * dual-stack socket's peer) is its IPv4 address; the port is not part of it. */
static void address_key(const cnm_address *address, uint64_t key[3]) {
  static const uint8_t mapped_prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  uint8_t bytes[16] = {0};
  uint64_t family = address->family;
  if (family == AF_INET6 && memcmp(address->bytes, mapped_prefix, sizeof mapped_prefix) == 0) {
    family = AF_INET;
    memcpy(bytes, address->bytes + 12, 4);
  } else {
    memcpy(bytes, address->bytes, family == AF_INET ? 4 : 16);
  }
  key[0] = family;
  memcpy(&key[1], bytes, 16);
}

static void remember_one(const cnm_address *address, const char *host, size_t host_length,
                         uint64_t lookup_ns, uint64_t thread) {
  resolution *entry = &table[__atomic_fetch_add(&next_ticket, 1, __ATOMIC_RELAXED) % ENTRIES];
  uint32_t state = LOAD(entry->state);
  /* Another writer that came round the whole table is still at it: this answer is dropped. */
  if (state & WRITING) return;
  if (!__atomic_compare_exchange_n(&entry->state, &state, state | WRITING, false, __ATOMIC_RELAXED,
                                   __ATOMIC_RELAXED))
    return;
  __atomic_thread_fence(__ATOMIC_RELEASE); /* WRITING is seen by whoever sees what follows */
  uint64_t key[3];
  address_key(address, key);
  for (int word = 0; word < 3; word++) STORE(entry->address[word], key[word]);
  uint64_t words[HOST_WORDS] = {0};
  if (host_length > CNM_RESOLUTION_HOST_SIZE) host_length = CNM_RESOLUTION_HOST_SIZE;
  memcpy(words, host, host_length);
  for (int word = 0; word < HOST_WORDS; word++) STORE(entry->host[word], words[word]);
  STORE(entry->host_length, host_length);
  STORE(entry->port, address->port);
  STORE(entry->thread, thread);
  STORE(entry->lookup_ns, lookup_ns);
  __atomic_store_n(&entry->state, (state & ~TIME_TAKEN) + GENERATION, __ATOMIC_RELEASE);
}

void cnm_resolutions_remember(const cnm_dns_record *lookup, uint64_t thread) {
  for (uint8_t index = 0; index < lookup->address_count && index < CNM_DNS_ADDRESSES; index++)
    remember_one(&lookup->addresses[index], lookup->host, lookup->host_length, lookup->duration_ns, thread);
}

/* Whether `state`, read before a copy, still holds after it (the time may have been taken
 * meanwhile: that changes no field). */
static bool unchanged(uint32_t before, const resolution *entry) {
  __atomic_thread_fence(__ATOMIC_ACQUIRE);
  return (LOAD(entry->state) | TIME_TAKEN) == (before | TIME_TAKEN);
}

bool cnm_resolutions_look_up(const cnm_address *address, uint64_t thread, cnm_resolution *found) {
  uint64_t wanted[3];
  address_key(address, wanted);
  uint64_t newest = __atomic_load_n(&next_ticket, __ATOMIC_ACQUIRE);
  resolution *best = NULL;
  uint32_t best_state = 0;
  int best_rank = 0;
  bool best_port_fits = false;
  for (uint64_t age = 1; age <= ENTRIES && age <= newest; age++) {
    resolution *entry = &table[(newest - age) % ENTRIES];
    uint32_t state = __atomic_load_n(&entry->state, __ATOMIC_ACQUIRE);
    if (state & WRITING || state < GENERATION) continue;
    uint64_t key[3] = {LOAD(entry->address[0]), LOAD(entry->address[1]), LOAD(entry->address[2])};
    uint64_t owner = LOAD(entry->thread), port = LOAD(entry->port);
    if (!unchanged(state, entry) || memcmp(key, wanted, sizeof key) != 0) continue;
    /* A lookup for the connection's port (or for none) over one for another service; then a lookup
     * whose time no connection took over one whose time was taken; then this thread's lookup over
     * another's (a resolver thread's: libcurl's, SwiftNIO's). */
    bool port_fits = port == 0 || port == address->port;
    int rank = (port_fits ? 4 : 0) + (state & TIME_TAKEN ? 0 : 2) + (owner == thread ? 2 : 1);
    if (rank > best_rank) {
      best = entry, best_state = state, best_rank = rank, best_port_fits = port_fits;
      if (rank == 8) break;
    }
  }
  if (!best) return false;
  uint64_t words[HOST_WORDS];
  for (int word = 0; word < HOST_WORDS; word++) words[word] = LOAD(best->host[word]);
  uint64_t host_length = LOAD(best->host_length), lookup_ns = LOAD(best->lookup_ns);
  if (!unchanged(best_state, best)) return false; /* written over since: 64 lookups in between */
  memcpy(found->host, words, sizeof found->host);
  found->host_length = (uint32_t)host_length;
  /* The lookup's time goes to one connection, to its port: the one whose exchange sets TIME_TAKEN.
   * (A connection to another port, made while a client looked the address up for its own, gets
   * the name and leaves the time to the connection the lookup was made for.) */
  uint32_t untaken = best_state & ~TIME_TAKEN;
  found->has_lookup_time = best_port_fits &&
    __atomic_compare_exchange_n(&best->state, &untaken, untaken | TIME_TAKEN, false, __ATOMIC_RELAXED,
                                __ATOMIC_RELAXED);
  found->lookup_ns = found->has_lookup_time ? lookup_ns : 0;
  return true;
}

const void *cnm_resolutions_table(uint64_t *next) {
  *next = __atomic_load_n(&next_ticket, __ATOMIC_ACQUIRE);
  return table;
}

void cnm_resolutions_adopt(const void *other, uint64_t next) {
  memcpy(table, other, sizeof table);
  __atomic_store_n(&next_ticket, next, __ATOMIC_RELEASE);
  cnm_resolutions_after_fork(); /* an entry copied while its lookup wrote it is empty */
}

void cnm_resolutions_after_fork(void) {
  /* A parent thread that was writing an entry does not exist in the child: the entry is empty. */
  for (int index = 0; index < ENTRIES; index++)
    if (LOAD(table[index].state) & WRITING) STORE(table[index].state, 0);
}
