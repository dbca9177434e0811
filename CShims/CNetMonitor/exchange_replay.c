/* An exchange that repeats the last one, recorded by the hooks alone (see cnetmonitor.h).
 *
 * The Swift path parses a repeated head by comparing it with the one before (HTTPHeadMemo) and
 * then runs the same events, counters and record code as for any exchange: ~1,100 instructions
 * and ~7 KB of code a request on nginx. Here the same exchange costs two compares, two clock
 * reads and a template copied into a record slot. What is compared is what the Swift parser
 * would have compared: the request's bytes and the response head's bytes, byte for byte; the
 * response body is only counted, as the parser only counts a body of known length.
 *
 * Only the owner thread takes calls (any other hands its calls to Swift), so it alone writes
 * replay_start, replay_first_byte and replay_body_left. A thread that stops the replay meanwhile
 * makes the owner's next change of phase fail; the parts it leaves pending are taken by the
 * direction they belong to, by the owner, or at close, each of which reads these fields after the
 * owner wrote them as long as one thread at a time moves a direction's bytes (what the parsers
 * assume too). Nothing here touches errno: clock_gettime succeeds, and the queue keeps it. */
#include <string.h>

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

static inline void store_u64(unsigned char *slot, uint16_t offset, uint64_t value) {
  memcpy(slot + offset, &value, sizeof value);
}

/* The record of a replayed exchange: the template, with this exchange's times. Dropped and
 * counted when the queue is full, as every record. */
static void record(const cnm_replay_template *template, uint64_t start, uint64_t first_byte, uint64_t end) {
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
  store_u64(slot, cnm_replay_record_fields.first_byte_ns, first_byte - start + 1);
  cnm_queue_publish(queue, ticket);
}

/* Moves the replay from phase `state` to `phase` (replays counted: + `done`); false when another
 * thread stopped it meanwhile. */
static inline bool advance(cnm_connection_head *head, uint64_t state, uint64_t phase, uint64_t done) {
  uint64_t next = (state & ~(uint64_t)CNM_REPLAY_PHASE) + (done << CNM_REPLAY_COUNT_SHIFT) + phase;
  return __atomic_compare_exchange_n(&head->replay_state, &state, next, false, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED);
}

/* The request: the remembered one, alone in this call. */
static bool take_request(cnm_connection_head *head, uint64_t state, const unsigned char *bytes, size_t count) {
  if ((state & CNM_REPLAY_PHASE) != CNM_REPLAY_ARMED || count != head->replay.request_length) return false;
  if (!bytes || memcmp(bytes, head->replay_request, count) != 0) return false;
  head->replay_start = cnm_monotonic_ns();
  return advance(head, state, CNM_REPLAY_REQUESTED, 0);
}

/* Its response: the remembered head at the start of this call, then its body, in this call and
 * any that follow; the body is only counted, as the parser only counts a body of known length.
 * Its last byte makes the record. More than the body (the next response's bytes) is Swift's. */
static bool take_response(cnm_connection_head *head, uint64_t state, const void *buffer,
                          const struct iovec *vector, int vector_count, size_t count) {
  const cnm_replay_template *template = &head->replay;
  uint64_t now;
  if ((state & CNM_REPLAY_PHASE) == CNM_REPLAY_REQUESTED) {
    uint64_t total = template->response_length + template->body_length;
    if (count < template->response_length || count > total) return false;
    const unsigned char *bytes = leading_bytes(buffer, vector, vector_count, template->response_length);
    if (!bytes || memcmp(bytes, head->replay_response, template->response_length) != 0) return false;
    now = cnm_monotonic_ns();
    head->replay_first_byte = now;
    if (count < total) {
      head->replay_body_left = total - count;
      return advance(head, state, CNM_REPLAY_RESPONDING, 0);
    }
  } else {
    if (count > head->replay_body_left) return false;
    if (count < head->replay_body_left) {
      head->replay_body_left -= count;
      return true;
    }
    now = cnm_monotonic_ns();
  }
  if (!advance(head, state, CNM_REPLAY_ARMED, 1)) return false;
  record(template, head->replay_start, head->replay_first_byte, now);
  return true;
}

void cnm_replay_take(cnm_connection_head *head, bool received, const void *buffer, const struct iovec *vector,
                     int vector_count, ssize_t result) {
  uint64_t state = __atomic_load_n(&head->replay_state, __ATOMIC_ACQUIRE);
  size_t count = (size_t)result;
  if (head->replay_owner == cnm_thread_identity() && !cnm_current_ssl &&
      (received == (head->requests_received != 0)
           ? take_request(head, state, leading_bytes(buffer, vector, vector_count, count), count)
           : take_response(head, state, buffer, vector, vector_count, count))) {
    __atomic_fetch_add(received ? &head->bytes_received : &head->bytes_sent, (uint64_t)result, __ATOMIC_RELAXED);
    return;
  }
  cnm_hand_to_swift(head, received, buffer, vector, vector_count, result);
}
