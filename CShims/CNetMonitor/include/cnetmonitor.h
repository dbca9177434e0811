/*
 * cnetmonitor.h — what NetMonitor's hot path needs from C: relaxed atomics on plain fields of
 * preallocated memory, a thread-local "inside the monitor" guard (Swift cannot declare __thread
 * variables), and a bounded multi-producer queue of fixed-size records.
 * Every function here is static inline or tiny, so the hooks stay free of calls they do not need.
 */
#ifndef CNETMONITOR_H
#define CNETMONITOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- atomics on plain fields (the connection table lives in mmap'ed memory) ------------------ */

static inline void cnm_add_u64(uint64_t *field, uint64_t value) {
  __atomic_fetch_add(field, value, __ATOMIC_RELAXED);
}
static inline uint64_t cnm_load_u64(const uint64_t *field) { return __atomic_load_n(field, __ATOMIC_ACQUIRE); }
static inline void cnm_store_u64(uint64_t *field, uint64_t value) { __atomic_store_n(field, value, __ATOMIC_RELEASE); }
/* Sets *field to `value` if it is 0; returns true when this call set it (first byte, first call). */
static inline bool cnm_set_once_u64(uint64_t *field, uint64_t value) {
  uint64_t expected = 0;
  return __atomic_compare_exchange_n(field, &expected, value, false, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED);
}
static inline uint8_t cnm_load_u8(const uint8_t *field) { return __atomic_load_n(field, __ATOMIC_ACQUIRE); }
static inline void cnm_store_u8(uint8_t *field, uint8_t value) { __atomic_store_n(field, value, __ATOMIC_RELEASE); }
static inline uint64_t cnm_next_id(uint64_t *counter) { return __atomic_add_fetch(counter, 1, __ATOMIC_RELAXED); }

/* ---- the guard: code of the monitor itself (its recorder thread, its sinks) is never recorded -- */

extern __thread int cnm_guard_depth __attribute__((tls_model("initial-exec")));
static inline bool cnm_guard_active(void) { return cnm_guard_depth != 0; }
static inline void cnm_guard_enter(void) { cnm_guard_depth++; }
static inline void cnm_guard_leave(void) { cnm_guard_depth--; }

/* ---- errno, read and restored around the monitor's own work ---------------------------------- */

int cnm_errno(void);
void cnm_set_errno(int value);

/* ---- a bounded MPSC queue of fixed-size slots (Vyukov's sequence-numbered ring) ---------------- */

typedef struct cnm_queue cnm_queue;

/* A queue of `capacity` (a power of two) slots of `slot_size` bytes; NULL when out of memory. */
cnm_queue *cnm_queue_create(size_t capacity, size_t slot_size);
/* Reserves a slot for a producer; NULL when the queue is full (the caller counts a drop). Never
 * blocks, never allocates: safe in any hook and in signal handlers. */
void *cnm_queue_reserve(cnm_queue *queue, uint64_t *ticket);
/* Publishes a reserved slot. */
void cnm_queue_publish(cnm_queue *queue, uint64_t ticket);
/* The oldest published slot, or NULL when there is none yet; the consumer copies it out and
 * then calls cnm_queue_release. Single consumer. */
void *cnm_queue_peek(cnm_queue *queue);
void cnm_queue_release(cnm_queue *queue);
/* Slots dropped because the queue was full. */
uint64_t cnm_queue_dropped(const cnm_queue *queue);
void cnm_queue_count_drop(cnm_queue *queue);

#endif
