/* An exchange that repeats the last one, recorded by the hooks alone (see cnetmonitor.h).
 *
 * The Swift path parses a repeated head by comparing it with the one before (HTTPHeadMemo) and
 * then runs the same events, counters and record code as for any exchange: ~1,100 instructions
 * and ~7 KB of code a request on nginx. Here the same exchange costs two compares, two clock
 * reads and a template copied into a record slot. What is compared is what the Swift parser
 * would have compared: the request's bytes and the response head's bytes, byte for byte; the
 * response body is only counted, as the parser only counts a body of known length. */
#include <string.h>
#include <time.h>

#include "cnetmonitor.h"
#include "cnm_records.h"

cnm_replay_fields cnm_replay_record_fields;

/* The first `length` bytes of a call, when they lie in its first buffer; NULL otherwise. */
static const unsigned char *leading_bytes(const void *buffer, const struct iovec *vector, int vector_count,
                                          size_t length) {
  if (buffer) return buffer;
  if (vector && vector_count > 0 && vector[0].iov_len >= length) return vector[0].iov_base;
  return NULL;
}

static inline uint64_t monotonic_ns(void) {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
}

static inline void store_u64(unsigned char *slot, uint16_t offset, uint64_t value) {
  memcpy(slot + offset, &value, sizeof value);
}

/* The record of a replayed exchange: the template, with this exchange's times. Dropped and
 * counted when the queue is full, as every record. */
static void record(const cnm_replay_template *template, uint64_t start, uint64_t end) {
  cnm_queue *queue = cnm_records;
  if (!queue) return;
  uint64_t ticket;
  unsigned char *slot = cnm_queue_reserve(queue, &ticket);
  if (!slot) {
    cnm_queue_count_drop(queue);
    return;
  }
  memcpy(slot, template->record, 64);
  memcpy(slot + template->run_offset, template->record + 64, template->run_length);
  store_u64(slot, cnm_replay_record_fields.start_unix_ns, template->unix_offset + start);
  store_u64(slot, cnm_replay_record_fields.duration_ns, end - start);
  store_u64(slot, cnm_replay_record_fields.first_byte_ns, end - start + 1);
  cnm_queue_publish(queue, ticket);
}

bool cnm_replay_take(cnm_connection_head *head, bool received, const void *buffer, const struct iovec *vector,
                     int vector_count, ssize_t result) {
  uint64_t state = __atomic_load_n(&head->replay_state, __ATOMIC_ACQUIRE);
  if (head->replay_owner != cnm_thread_identity() || cnm_current_ssl) return false;
  const cnm_replay_template *template = &head->replay;
  size_t count = (size_t)result;
  if (received == (head->requests_received != 0)) {
    /* A request: the remembered one, alone. */
    if ((state & 3) != CNM_REPLAY_ARMED || count != template->request_length) return false;
    const unsigned char *bytes = leading_bytes(buffer, vector, vector_count, count);
    if (!bytes || memcmp(bytes, head->replay_request, count) != 0) return false;
    head->replay_start = monotonic_ns();
    uint64_t requested = (state & ~(uint64_t)3) | CNM_REPLAY_REQUESTED;
    if (!__atomic_compare_exchange_n(&head->replay_state, &state, requested, false, __ATOMIC_ACQ_REL,
                                     __ATOMIC_RELAXED))
      return false;
  } else {
    /* Its response: the remembered head and the whole body, in this one call. */
    if ((state & 3) != CNM_REPLAY_REQUESTED || count != template->response_length + template->body_length)
      return false;
    const unsigned char *bytes = leading_bytes(buffer, vector, vector_count, template->response_length);
    if (!bytes || memcmp(bytes, head->replay_response, template->response_length) != 0) return false;
    uint64_t end = monotonic_ns();
    uint64_t start = head->replay_start;
    uint64_t armed = ((state >> 2) + 1) << 2 | CNM_REPLAY_ARMED;
    if (!__atomic_compare_exchange_n(&head->replay_state, &state, armed, false, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
      return false;
    record(template, start, end);
  }
  __atomic_fetch_add(received ? &head->bytes_received : &head->bytes_sent, (uint64_t)result, __ATOMIC_RELAXED);
  return true;
}
