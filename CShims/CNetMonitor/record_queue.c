/* The bounded MPSC queue (cnetmonitor.h): Vyukov's ring, laid out in the memory it is formatted
 * into — the header, then one sequence number per slot, then the slots — with offsets instead
 * of pointers, so that a second process mapping the same file sees the same queue.
 *
 * A slot's sequence number is kept less its index (Vyukov's number for the slot at `position` is
 * `position & mask` more than what is stored): stored, it is the slot's lap (`lap`) while the slot
 * is free, and that plus one once published. So zeroed memory is an empty queue: formatting
 * writes none of the sequence numbers, and a queue in a new file takes the memory of only the
 * ones its usable slots need. */
#include "cnetmonitor.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

struct cnm_queue {
  uint64_t mask;
  uint64_t slot_size;
  uint64_t sequences_offset;
  uint64_t slots_offset;
  /* Slots a producer may take, the first ones: all of them, but in a queue that takes its memory
   * as it fills (cnm_queue_set_usable). Only grows, and only before the first wrap. */
  uint64_t usable;
  /* 0, or why the memory of more slots could not be had (an errno): the records past `usable` are
   * dropped. */
  int64_t growth_error;
  /* 1 while a producer populates the next stage (grow): one grower at a time. */
  uint32_t growing;
  uint64_t enqueue_position __attribute__((aligned(64)));
  uint64_t dequeue_position __attribute__((aligned(64)));
  uint64_t dropped __attribute__((aligned(64)));
};

static size_t round_up(size_t value, size_t alignment) { return (value + alignment - 1) & ~(alignment - 1); }

static uint64_t *sequences(const cnm_queue *queue) {
  return (uint64_t *)((unsigned char *)queue + queue->sequences_offset);
}
static unsigned char *slot(const cnm_queue *queue, uint64_t position) {
  return (unsigned char *)queue + queue->slots_offset + (position & queue->mask) * queue->slot_size;
}
/* `position` less its slot's index: what a free slot's stored sequence number is at that position. */
static uint64_t lap(const cnm_queue *queue, uint64_t position) { return position & ~queue->mask; }

size_t cnm_queue_footprint(size_t capacity, size_t slot_size) {
  return round_up(sizeof(cnm_queue) + capacity * sizeof(uint64_t), 64) + capacity * slot_size;
}

cnm_queue *cnm_queue_format(void *memory, size_t capacity, size_t slot_size) {
  if (capacity < 2 || (capacity & (capacity - 1)) != 0 || slot_size == 0) return NULL;
  cnm_queue *queue = memory;
  memset(queue, 0, sizeof *queue);
  queue->mask = capacity - 1;
  queue->slot_size = slot_size;
  queue->sequences_offset = sizeof *queue;
  queue->slots_offset = round_up(sizeof *queue + capacity * sizeof(uint64_t), 64);
  queue->usable = capacity;
  return queue; /* the sequence numbers are zero: every slot free, at lap 0 */
}

cnm_queue *cnm_queue_create(size_t capacity, size_t slot_size) {
  if (capacity < 2 || (capacity & (capacity - 1)) != 0) return NULL;
  void *memory = mmap(NULL, cnm_queue_footprint(capacity, slot_size), PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  return memory == MAP_FAILED ? NULL : cnm_queue_format(memory, capacity, slot_size);
}

bool cnm_queue_is_valid(const void *memory, size_t size, size_t slot_size) {
  const cnm_queue *queue = memory;
  if (size < sizeof *queue) return false;
  uint64_t capacity = queue->mask + 1;
  if (capacity < 2 || (capacity & queue->mask) != 0 || capacity > (1u << 24)) return false;
  return queue->slot_size == slot_size && queue->usable <= capacity && queue->sequences_offset == sizeof *queue &&
         queue->slots_offset == round_up(sizeof *queue + capacity * sizeof(uint64_t), 64) &&
         cnm_queue_footprint(capacity, slot_size) <= size;
}

int cnm_populate(void *start, void *end) {
  uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
  uintptr_t from = (uintptr_t)start & ~(page - 1);
  if (madvise((void *)from, (uintptr_t)end - from, MADV_POPULATE_WRITE) == 0) return 0;
  return errno == EFAULT ? ENOSPC : errno;
}

/* A growing queue takes the memory of its slots in stages: four times the usable ones, at most
 * GROWTH_LIMIT more (300 KB of records, ~0.2 ms of page faults here), at most all. */
enum { GROWTH_LIMIT = 256 };
static uint64_t next_stage(uint64_t usable, uint64_t capacity) {
  uint64_t next = usable * 4 < usable + GROWTH_LIMIT ? usable * 4 : usable + GROWTH_LIMIT;
  return next < capacity ? next : capacity;
}
/* The first reservation at or past this ticket takes the next stage: half a stage (at most
 * GROWTH_LIMIT / 2) before the end of the usable slots, so that other threads have those to fill
 * meanwhile. */
static uint64_t growth_ticket(uint64_t usable) {
  return usable - (usable / 2 < GROWTH_LIMIT / 2 ? usable / 2 : GROWTH_LIMIT / 2);
}

/* Populates the memory of slots [first, end): their sequence numbers and the slots. Returns 0 or
 * the errno. */
static int populate_slots(cnm_queue *queue, uint64_t first, uint64_t end) {
  int error = cnm_populate(&sequences(queue)[first], &sequences(queue)[end]);
  return error ? error : cnm_populate(slot(queue, first), slot(queue, end - 1) + queue->slot_size);
}

/* populate_slots, on a producer's thread: on failure (a full file system) says why in
 * `growth_error`, and from then on records past the usable slots are dropped. errno is left as
 * it was. Returns whether the memory is there. */
static bool take_memory(cnm_queue *queue, uint64_t first, uint64_t end) {
  int saved_errno = errno;
  int error = populate_slots(queue, first, end);
  if (error) __atomic_store_n(&queue->growth_error, error, __ATOMIC_RELEASE);
  errno = saved_errno;
  return error == 0;
}

/* Makes the next stage usable, on the thread whose reservation reached its growth ticket, unless
 * another thread is at it (`growing`) or a stage failed before. On failure the queue stays as it
 * is (take_memory): the records past it are dropped and counted, never a SIGBUS. */
static __attribute__((noinline, cold)) void grow(cnm_queue *queue) {
  if (__atomic_load_n(&queue->growth_error, __ATOMIC_ACQUIRE) != 0) return;
  uint32_t idle = 0;
  if (!__atomic_compare_exchange_n(&queue->growing, &idle, 1, false, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) return;
  uint64_t usable = __atomic_load_n(&queue->usable, __ATOMIC_ACQUIRE); /* only the grower changes it */
  uint64_t position = __atomic_load_n(&queue->enqueue_position, __ATOMIC_RELAXED);
  if (usable <= queue->mask && position >= growth_ticket(usable)) {
    uint64_t next = next_stage(usable, queue->mask + 1);
    if (take_memory(queue, usable, next))
      __atomic_store_n(&queue->usable, next, __ATOMIC_RELEASE);
  }
  __atomic_store_n(&queue->growing, 0, __ATOMIC_RELEASE);
}

/* A producer reached a slot past the usable ones while the next stage is being populated (the
 * grower was preempted, or the other threads outran it): it populates that slot's own pages, as
 * the kernel would at its first write, rather than drop its record. Fails (and the record is
 * dropped) once memory could not be had: the file system is full. */
static __attribute__((noinline, cold)) bool populate_ahead(cnm_queue *queue, uint64_t position) {
  if (__atomic_load_n(&queue->growth_error, __ATOMIC_ACQUIRE) != 0) return false;
  uint64_t index = position & queue->mask;
  return take_memory(queue, index, index + 1);
}

static void *reserve_ahead(cnm_queue *queue, uint64_t *ticket);

/* Vyukov's reservation. Past the usable slots, the fast path (`ahead` false) hands over to
 * reserve_ahead, which populates them: a tail call, so that the fast path saves no registers
 * for a call it hardly ever makes. */
static inline __attribute__((always_inline)) void *reserve(cnm_queue *queue, uint64_t *ticket, bool ahead) {
  uint64_t position = __atomic_load_n(&queue->enqueue_position, __ATOMIC_RELAXED);
  for (;;) {
    uint64_t usable = __atomic_load_n(&queue->usable, __ATOMIC_ACQUIRE);
    if (__builtin_expect((position & queue->mask) >= usable, 0)) {
      if (!ahead) return reserve_ahead(queue, ticket);
      if (!populate_ahead(queue, position)) return NULL;
    }
    uint64_t sequence = __atomic_load_n(&sequences(queue)[position & queue->mask], __ATOMIC_ACQUIRE);
    int64_t difference = (int64_t)(sequence - lap(queue, position));
    if (difference == 0) {
      if (__atomic_compare_exchange_n(&queue->enqueue_position, &position, position + 1, true, __ATOMIC_RELAXED,
                                      __ATOMIC_RELAXED)) {
        *ticket = position;
        if (__builtin_expect(usable <= queue->mask, 0) && position >= growth_ticket(usable)) grow(queue);
        return slot(queue, position);
      }
    } else if (difference < 0) {
      return NULL; /* full */
    } else {
      position = __atomic_load_n(&queue->enqueue_position, __ATOMIC_RELAXED);
    }
  }
}

static __attribute__((noinline, cold)) void *reserve_ahead(cnm_queue *queue, uint64_t *ticket) {
  return reserve(queue, ticket, true);
}

void *cnm_queue_reserve(cnm_queue *queue, uint64_t *ticket) { return reserve(queue, ticket, false); }

void cnm_queue_prefetch_next(const cnm_queue *queue, const uint16_t *offsets, uint32_t count) {
  uint64_t position = __atomic_load_n(&queue->enqueue_position, __ATOMIC_RELAXED);
  __builtin_prefetch(&sequences(queue)[position & queue->mask], 1, 3);
  const unsigned char *next = slot(queue, position);
  for (uint32_t i = 0; i < count; i++) __builtin_prefetch(next + offsets[i], 1, 3);
}

void cnm_queue_publish(cnm_queue *queue, uint64_t ticket) {
  __atomic_store_n(&sequences(queue)[ticket & queue->mask], lap(queue, ticket) + 1, __ATOMIC_RELEASE);
}

void *cnm_queue_peek(cnm_queue *queue) {
  uint64_t position = queue->dequeue_position;
  uint64_t sequence = __atomic_load_n(&sequences(queue)[position & queue->mask], __ATOMIC_ACQUIRE);
  if (sequence != lap(queue, position) + 1) return NULL;
  return slot(queue, position);
}

void cnm_queue_release(cnm_queue *queue) {
  uint64_t position = queue->dequeue_position;
  __atomic_store_n(&sequences(queue)[position & queue->mask], lap(queue, position) + queue->mask + 1,
                   __ATOMIC_RELEASE);
  __atomic_store_n(&queue->dequeue_position, position + 1, __ATOMIC_RELEASE);
}

bool cnm_queue_has_unpublished(const cnm_queue *queue) {
  return queue->dequeue_position != __atomic_load_n(&queue->enqueue_position, __ATOMIC_ACQUIRE);
}

void cnm_queue_skip(cnm_queue *queue) {
  if (cnm_queue_has_unpublished(queue)) cnm_queue_release(queue);
}

uint64_t cnm_queue_read_position(const cnm_queue *queue) {
  return __atomic_load_n(&queue->dequeue_position, __ATOMIC_ACQUIRE);
}
uint64_t cnm_queue_write_position(const cnm_queue *queue) {
  return __atomic_load_n(&queue->enqueue_position, __ATOMIC_ACQUIRE);
}
void *cnm_queue_published_slot(cnm_queue *queue, uint64_t position) {
  uint64_t sequence = __atomic_load_n(&sequences(queue)[position & queue->mask], __ATOMIC_ACQUIRE);
  return sequence == lap(queue, position) + 1 ? slot(queue, position) : NULL;
}

uint64_t cnm_queue_dropped(const cnm_queue *queue) { return __atomic_load_n(&queue->dropped, __ATOMIC_RELAXED); }
void cnm_queue_count_drop(cnm_queue *queue) { __atomic_fetch_add(&queue->dropped, 1, __ATOMIC_RELAXED); }
uint64_t cnm_queue_capacity(const cnm_queue *queue) { return queue->mask + 1; }
int cnm_queue_make_usable(cnm_queue *queue, uint64_t usable) {
  if (usable > queue->mask + 1) usable = queue->mask + 1;
  if (usable == 0) usable = 1;
  int error = populate_slots(queue, 0, usable);
  if (error == 0) __atomic_store_n(&queue->usable, usable, __ATOMIC_RELEASE);
  return error;
}

size_t cnm_queue_header_size(void) { return sizeof(cnm_queue); }
int cnm_queue_growth_error(const cnm_queue *queue) {
  return (int)__atomic_load_n(&queue->growth_error, __ATOMIC_ACQUIRE);
}
