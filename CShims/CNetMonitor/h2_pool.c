/*
 * h2_pool.c — the pools of HTTP/2 connection states and of the stream tables a connection borrows
 * while it has more streams in flight than its own table holds (cnetmonitor.h). Each is one
 * mapping, reserved once; a bitmap of the entries taken, changed with compare-and-swap, so that any
 * hooked thread can take or give back an entry without a lock.
 */
#include "chttp2.h"
#include "cnetmonitor.h"

#include <sys/mman.h>

typedef struct pool {
  unsigned char *base;
  size_t entry_size;
  uint32_t capacity; /* a multiple of 64 */
  uint64_t *taken;   /* a bit an entry */
} pool;

static uint64_t connections_taken[CNM_H2_POOL_CAPACITY / 64];
static uint64_t tables_taken[CNM_H2_TABLE_POOL_CAPACITY / 64];
static pool connections = {NULL, 0, CNM_H2_POOL_CAPACITY, connections_taken};
static pool tables = {NULL, 0, CNM_H2_TABLE_POOL_CAPACITY, tables_taken};
static uint32_t generations;

/* Maps `into` for entries of `entry_size` bytes, 64-byte aligned. */
static bool map_pool(pool *into, size_t entry_size) {
  size_t size = (entry_size + 63) & ~(size_t)63;
  void *memory = mmap(NULL, size * into->capacity, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                      -1, 0);
  if (memory == MAP_FAILED) return false;
  into->entry_size = size;
  __atomic_store_n(&into->base, (unsigned char *)memory, __ATOMIC_RELEASE);
  return true;
}

static void *take(pool *from) {
  unsigned char *base = __atomic_load_n(&from->base, __ATOMIC_ACQUIRE);
  if (!base) return NULL;
  for (uint32_t word = 0; word < from->capacity / 64; word++) {
    uint64_t bits = __atomic_load_n(&from->taken[word], __ATOMIC_RELAXED);
    while (bits != UINT64_MAX) {
      int bit = __builtin_ctzll(~bits);
      if (__atomic_compare_exchange_n(&from->taken[word], &bits, bits | (1ull << bit), false, __ATOMIC_ACQ_REL,
                                      __ATOMIC_RELAXED))
        return base + ((size_t)word * 64 + (size_t)bit) * from->entry_size;
    }
  }
  return NULL;
}

static void give_back(pool *to, void *entry) {
  unsigned char *base = __atomic_load_n(&to->base, __ATOMIC_ACQUIRE);
  unsigned char *at = entry;
  if (!base || at < base || at >= base + to->entry_size * to->capacity) return; /* not of this pool */
  size_t index = (size_t)(at - base) / to->entry_size;
  __atomic_fetch_and(&to->taken[index / 64], ~(1ull << (index % 64)), __ATOMIC_RELEASE);
}

bool cnm_h2_pool_set_up(size_t entry_size) {
  if (__atomic_load_n(&connections.base, __ATOMIC_ACQUIRE)) return true;
  /* The tables are a luxury: without them a connection follows 128 streams in flight. */
  if (!__atomic_load_n(&tables.base, __ATOMIC_ACQUIRE)) (void)map_pool(&tables, sizeof(ch2_stream_table));
  return map_pool(&connections, entry_size);
}

void *cnm_h2_pool_take(uint32_t *generation) {
  void *entry = take(&connections);
  if (entry) *generation = __atomic_add_fetch(&generations, 1, __ATOMIC_RELAXED);
  return entry;
}

void cnm_h2_pool_give_back(void *entry) { give_back(&connections, entry); }

static uint32_t in_use(const pool *of) {
  uint32_t count = 0;
  for (uint32_t word = 0; word < of->capacity / 64; word++)
    count += (uint32_t)__builtin_popcountll(__atomic_load_n(&of->taken[word], __ATOMIC_RELAXED));
  return count;
}

uint32_t cnm_h2_pool_in_use(void) { return in_use(&connections); }

void cnm_h2_pool_after_fork(void) {
  unsigned char *base = __atomic_load_n(&connections.base, __ATOMIC_ACQUIRE);
  if (!base) return;
  for (uint32_t index = 0; index < connections.capacity; index++) {
    if (connections.taken[index / 64] & (1ull << (index % 64)))
      ch2_connection_forked((ch2_connection *)(void *)(base + (size_t)index * connections.entry_size));
  }
}

/* A table goes back to this copy's pool: the injected library's, for a connection the monitor
 * adopted, goes back to the library's. */
static void give_back_table(ch2_stream_table *table) { give_back(&tables, table); }

ch2_stream_table *cnm_h2_more_stream_slots(void) {
  ch2_stream_table *table = take(&tables);
  if (table) table->give_back = give_back_table;
  return table;
}

uint32_t cnm_h2_tables_in_use(void) { return in_use(&tables); }
