/* The out-of-line parts of cnetmonitor.h. */
#include "cnetmonitor.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

__thread int cnm_guard_depth __attribute__((tls_model("initial-exec")));

int cnm_errno(void) { return errno; }
void cnm_set_errno(int value) { errno = value; }

struct cnm_queue {
  size_t mask, slot_size;
  unsigned char *slots;
  uint64_t *sequences;
  uint64_t enqueue_position __attribute__((aligned(64)));
  uint64_t dequeue_position __attribute__((aligned(64)));
  uint64_t dropped;
};

cnm_queue *cnm_queue_create(size_t capacity, size_t slot_size) {
  if (capacity < 2 || (capacity & (capacity - 1)) != 0) return NULL;
  cnm_queue *queue = aligned_alloc(64, sizeof *queue);
  if (!queue) return NULL;
  memset(queue, 0, sizeof *queue);
  queue->mask = capacity - 1;
  queue->slot_size = slot_size;
  queue->slots = calloc(capacity, slot_size);
  queue->sequences = calloc(capacity, sizeof *queue->sequences);
  if (!queue->slots || !queue->sequences) {
    free(queue->slots);
    free(queue->sequences);
    free(queue);
    return NULL;
  }
  for (size_t i = 0; i < capacity; i++) queue->sequences[i] = i;
  return queue;
}

void *cnm_queue_reserve(cnm_queue *queue, uint64_t *ticket) {
  uint64_t position = __atomic_load_n(&queue->enqueue_position, __ATOMIC_RELAXED);
  for (;;) {
    uint64_t sequence = __atomic_load_n(&queue->sequences[position & queue->mask], __ATOMIC_ACQUIRE);
    int64_t difference = (int64_t)(sequence - position);
    if (difference == 0) {
      if (__atomic_compare_exchange_n(&queue->enqueue_position, &position, position + 1, true, __ATOMIC_RELAXED,
                                      __ATOMIC_RELAXED)) {
        *ticket = position;
        return queue->slots + (position & queue->mask) * queue->slot_size;
      }
    } else if (difference < 0) {
      return NULL; /* full */
    } else {
      position = __atomic_load_n(&queue->enqueue_position, __ATOMIC_RELAXED);
    }
  }
}

void cnm_queue_publish(cnm_queue *queue, uint64_t ticket) {
  __atomic_store_n(&queue->sequences[ticket & queue->mask], ticket + 1, __ATOMIC_RELEASE);
}

void *cnm_queue_peek(cnm_queue *queue) {
  uint64_t position = queue->dequeue_position;
  uint64_t sequence = __atomic_load_n(&queue->sequences[position & queue->mask], __ATOMIC_ACQUIRE);
  if (sequence != position + 1) return NULL;
  return queue->slots + (position & queue->mask) * queue->slot_size;
}

void cnm_queue_release(cnm_queue *queue) {
  uint64_t position = queue->dequeue_position;
  __atomic_store_n(&queue->sequences[position & queue->mask], position + queue->mask + 1, __ATOMIC_RELEASE);
  queue->dequeue_position = position + 1;
}

uint64_t cnm_queue_dropped(const cnm_queue *queue) { return __atomic_load_n(&queue->dropped, __ATOMIC_RELAXED); }
void cnm_queue_count_drop(cnm_queue *queue) { __atomic_fetch_add(&queue->dropped, 1, __ATOMIC_RELAXED); }
