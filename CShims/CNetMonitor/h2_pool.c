/*
 * h2_pool.c — the pool of HTTP/2 connection states (cnetmonitor.h). One mapping, reserved once;
 * a bitmap of the entries taken, changed with compare-and-swap, so that any hooked thread can take
 * or give back an entry without a lock.
 */
#include "cnetmonitor.h"

#include <sys/mman.h>

static unsigned char *pool;
static size_t pool_entry_size;
static uint64_t taken[CNM_H2_POOL_CAPACITY / 64];
static uint32_t generations;

bool cnm_h2_pool_set_up(size_t entry_size) {
  if (__atomic_load_n(&pool, __ATOMIC_ACQUIRE)) return true;
  size_t size = (entry_size + 63) & ~(size_t)63;
  void *memory = mmap(NULL, size * CNM_H2_POOL_CAPACITY, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (memory == MAP_FAILED) return false;
  pool_entry_size = size;
  __atomic_store_n(&pool, (unsigned char *)memory, __ATOMIC_RELEASE);
  return true;
}

void *cnm_h2_pool_take(uint32_t *generation) {
  unsigned char *base = __atomic_load_n(&pool, __ATOMIC_ACQUIRE);
  if (!base) return NULL;
  for (uint32_t word = 0; word < CNM_H2_POOL_CAPACITY / 64; word++) {
    uint64_t bits = __atomic_load_n(&taken[word], __ATOMIC_RELAXED);
    while (bits != UINT64_MAX) {
      int bit = __builtin_ctzll(~bits);
      if (__atomic_compare_exchange_n(&taken[word], &bits, bits | (1ull << bit), false, __ATOMIC_ACQ_REL,
                                      __ATOMIC_RELAXED)) {
        *generation = __atomic_add_fetch(&generations, 1, __ATOMIC_RELAXED);
        return base + ((size_t)word * 64 + (size_t)bit) * pool_entry_size;
      }
    }
  }
  return NULL;
}

void cnm_h2_pool_give_back(void *entry) {
  unsigned char *base = __atomic_load_n(&pool, __ATOMIC_ACQUIRE);
  unsigned char *at = entry;
  if (!base || at < base || at >= base + pool_entry_size * CNM_H2_POOL_CAPACITY) return; /* not of this pool */
  size_t index = (size_t)(at - base) / pool_entry_size;
  __atomic_fetch_and(&taken[index / 64], ~(1ull << (index % 64)), __ATOMIC_RELEASE);
}

uint32_t cnm_h2_pool_in_use(void) {
  uint32_t count = 0;
  for (uint32_t word = 0; word < CNM_H2_POOL_CAPACITY / 64; word++)
    count += (uint32_t)__builtin_popcountll(__atomic_load_n(&taken[word], __ATOMIC_RELAXED));
  return count;
}
