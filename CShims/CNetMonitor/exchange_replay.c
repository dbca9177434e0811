/* Simple exchanges, recorded by the hooks alone (see cnetmonitor.h).
 *
 * The Swift path parses a head byte by byte into its parser's state and then runs the events,
 * counters and record code every exchange runs: ~4,300 instructions for a request nginx serves
 * with a head it has not seen before, ~1,100 for one that repeats. Here a simple exchange costs
 * its two heads read (compared with the last ones, or read by simple_heads.c), two clock reads,
 * and a record written from the template, the request's fields and the response's. The bodies
 * are only counted, as the Swift parser only counts a body of known length, but for a chunked
 * response's framing, read as the Swift parser reads it (chunked_body.c).
 *
 * Only the owner thread takes calls (any other hands its calls to Swift), so it alone writes
 * replay_start, replay_first_byte, the bodies' bytes left and the heads with their bytes. A
 * thread that stops the replay meanwhile makes the owner's next change of phase fail; the parts it leaves
 * pending are taken by the direction they belong to, by the owner, or at close, each of which
 * reads these fields after the owner wrote them as long as one thread at a time moves a
 * direction's bytes (what the parsers assume too). Nothing here touches errno: clock_gettime
 * succeeds, and the queue keeps it. */
#include <string.h>

#include "cnetmonitor.h"
#include "cnm_record_layout.h"
#include "cnm_records.h"

cnm_replay_fields cnm_replay_record_fields;

void cnm_replay_fields_set_up(void) {
  cnm_replay_fields fields = {
      .start_unix_ns = offsetof(cnm_raw_record, start_unix_ns),
      .duration_ns = offsetof(cnm_raw_record, duration_ns),
      .first_byte_ns = offsetof(cnm_raw_record, http_first_byte_ns),
      .status = offsetof(cnm_raw_record, http_status),
      .request_bytes = offsetof(cnm_raw_record, http_request_bytes),
      .response_bytes = offsetof(cnm_raw_record, http_response_bytes),
      .identity = offsetof(cnm_raw_record, core) + offsetof(cnm_connection_core, id),
      .setup = offsetof(cnm_raw_record, core) + offsetof(cnm_connection_core, dns_ns),
      .reused = offsetof(cnm_raw_record, http_reused),
      .protocol = offsetof(cnm_raw_record, http_protocol),
      .request_head = offsetof(cnm_raw_record, http_request),
      .text = offsetof(cnm_http_head, text),
      .scalars_length = offsetof(cnm_http_head, text),
  };
  cnm_replay_record_fields = fields;
}

void cnm_replay_request_scalars(const cnm_simple_request *request, void *scalars) {
  /* All zero (no transfer coding, an ordinary request) but for what the request says. */
  cnm_http_head head;
  memset(&head, 0, offsetof(cnm_http_head, text));
  head.method_length = request->method_length;
  head.minor_version = request->minor_version;
  head.target_length = request->target_length;
  head.host_length = request->host_length;
  head.connection_keep_alive = request->connection == CNM_CONNECTION_KEEP_ALIVE;
  head.connection_close = request->connection == CNM_CONNECTION_CLOSE;
  if (request->framing.framed_at) {
    head.has_content_length = true;
    head.content_length_value = request->framing.content_length;
    head.body_framing = CNM_BODY_CONTENT_LENGTH;
  } else if (request->framing.chunked_at) {
    head.has_transfer_encoding = true;
    head.is_chunked = true;
    head.body_framing = CNM_BODY_CHUNKED;
  }
  memcpy(scalars, &head, offsetof(cnm_http_head, text));
}

/* The first bytes of a call and how many there are in one run: its buffer, or its first vector
 * element (at most the call's `count`); NULL when there are none. */
static const unsigned char *first_bytes(const void *buffer, const struct iovec *vector, int vector_count,
                                        size_t count, size_t *available) {
  if (buffer) {
    *available = count;
    return buffer;
  }
  if (!vector || vector_count <= 0) return NULL;
  *available = vector[0].iov_len < count ? vector[0].iov_len : count;
  return vector[0].iov_base;
}

static inline void store_u64(unsigned char *slot, uint16_t offset, uint64_t value) {
  memcpy(slot + offset, &value, sizeof value);
}
static inline void store_u16(unsigned char *slot, uint16_t offset, uint16_t value) {
  memcpy(slot + offset, &value, sizeof value);
}

/* Writes the last request's head into the template after the connection's identity, as the
 * Swift parser would have made it: its HTTPHead's scalars, and its text packed (method, target,
 * Host). Once a request that differs from the one before, so that a request that repeats costs one
 * copy. */
static void write_request_head(cnm_connection_head *head) {
  const cnm_replay_fields *fields = &cnm_replay_record_fields;
  cnm_replay_template *template = &head->replay;
  const cnm_simple_request *request = &head->replay_request;
  const unsigned char *bytes = head->replay_request_bytes;
  unsigned char *http = template->record + 64 + template->identity_length;
  cnm_replay_request_scalars(request, http);
  unsigned char *text = http + fields->text;
  size_t method = request->method_length;
  memcpy(text, bytes, 16); /* the method (at most 15 bytes) in one move; the target follows over the rest */
  memcpy(text + method, bytes + method + 1, request->target_length);
  memcpy(text + method + request->target_length, bytes + request->host_offset, request->host_length);
  template->run_length =
      (uint16_t)(text + method + request->target_length + request->host_length - (template->record + 64));
}

/* A connection's first exchange is recorded: its template keeps the connection's identity alone
 * (the end of the part it copied from the setup on), and its records are reused from now on. */
static void keep_identity_alone(cnm_replay_template *template) {
  const cnm_replay_fields *fields = &cnm_replay_record_fields;
  uint16_t setup = fields->identity - fields->setup;
  template->identity_length -= setup;
  memmove(template->record + 64, template->record + 64 + setup, template->identity_length);
  template->record[fields->reused] = 1;
  template->run_length = 0;
  template->first_exchange = false;
}

/* What response_body says of a body whose length its head does not give. */
#define BODY_CHUNKED (UINT64_MAX - 1) /* its chunked coding frames it */
#define BODY_TO_CLOSE UINT64_MAX      /* it runs to the close */

/* The bytes of the response's body, as the Swift parser frames it: none when it answers HEAD or is
 * a 204 or 304 (a Content-Length then says what a GET would have got), else its Content-Length's,
 * or BODY_CHUNKED, or BODY_TO_CLOSE when neither frames it. */
static inline uint64_t response_body(const cnm_connection_head *head) {
  const cnm_simple_response *response = &head->replay_response;
  bool answers_head = head->replay_request.method_length == 4 && memcmp(head->replay_request_bytes, "HEAD", 4) == 0;
  if (answers_head || response->status == 204 || response->status == 304) return 0;
  if (response->framing.chunked_at) return BODY_CHUNKED;
  return response->framing.framed_at ? response->framing.content_length : BODY_TO_CLOSE;
}

/* Reads the bytes of a call from `skip` on (its buffer, its vector's elements up to `count`, or,
 * from sendfile, neither: bytes not seen) as the next of the chunked body `body`: it goes on after
 * them, or ends with their last byte. CNM_CHUNKED_REFUSED, `body` unchanged, when they are not
 * its: bytes the Swift parser gives up on, or more than the body (the next message's, Swift's). */
static cnm_chunked_outcome read_chunked(cnm_chunked_body *body, const void *buffer, const struct iovec *vector,
                                        int vector_count, size_t skip, size_t count) {
  cnm_chunked_body next = *body;
  cnm_chunked_outcome outcome = CNM_CHUNKED_GOES_ON;
  size_t used;
  if (buffer || !vector) {
    outcome = cnm_chunked_read(&next, buffer ? (const unsigned char *)buffer + skip : NULL, count - skip, &used);
    if (outcome == CNM_CHUNKED_ENDED && used != count - skip) return CNM_CHUNKED_REFUSED;
  } else {
    size_t offset = 0; /* of the element's first byte in the call */
    for (int index = 0; index < vector_count && offset < count; index++) {
      if (outcome == CNM_CHUNKED_ENDED) return CNM_CHUNKED_REFUSED; /* bytes follow its end */
      size_t length = vector[index].iov_len < count - offset ? vector[index].iov_len : count - offset;
      if (offset + length > skip) {
        size_t from = skip > offset ? skip - offset : 0;
        outcome = cnm_chunked_read(&next, (const unsigned char *)vector[index].iov_base + from, length - from, &used);
        if (outcome == CNM_CHUNKED_REFUSED || (outcome == CNM_CHUNKED_ENDED && used != length - from))
          return CNM_CHUNKED_REFUSED;
      }
      offset += length;
    }
  }
  if (outcome != CNM_CHUNKED_REFUSED) *body = next;
  return outcome;
}

/* The record of a simple exchange: the template's first line, connection and request head, its
 * response's status and its `response_bytes`, its times. Dropped and counted when the queue is full, as every
 * record. */
static void record(cnm_connection_head *head, uint64_t start, uint64_t first_byte, uint64_t end,
                   uint64_t response_bytes) {
  cnm_queue *queue = cnm_records;
  if (!queue) return;
  uint64_t ticket;
  unsigned char *slot = cnm_queue_reserve(queue, &ticket);
  if (!slot) {
    cnm_queue_count_drop(queue);
    return;
  }
  const cnm_replay_fields *fields = &cnm_replay_record_fields;
  cnm_replay_template *template = &head->replay;
  const cnm_simple_response *response = &head->replay_response;
  if (!template->run_length) write_request_head(head);
  memcpy(slot, template->record, 64);
  memcpy(slot + (template->first_exchange ? fields->setup : fields->identity), template->record + 64,
         template->run_length);
  slot[fields->protocol] = head->replay_request.minor_version ? CNM_HTTP_11 : CNM_HTTP_10; /* its request's */
  store_u16(slot, fields->status, response->status);
  const cnm_simple_request *request = &head->replay_request;
  uint64_t request_body = request->framing.chunked_at ? head->replay_request_chunked.bytes : request->framing.content_length;
  store_u64(slot, fields->request_bytes, request->length + request_body);
  store_u64(slot, fields->response_bytes, response_bytes);
  store_u64(slot, fields->start_unix_ns, template->unix_offset + start);
  store_u64(slot, fields->duration_ns, end - start);
  store_u64(slot, fields->first_byte_ns, first_byte - start + 1);
  cnm_queue_publish(queue, ticket);
  if (template->first_exchange) keep_identity_alone(template);
}

/* Moves the replay from phase `state` to `phase` with `interims` (CNM_REPLAY_INTERIMS' bits: the
 * interim answers of the exchange under way; 0 once it ended) and no head begun, replays counted:
 * + `done`; false when another thread stopped it meanwhile. */
static inline bool advance(cnm_connection_head *head, uint64_t state, uint64_t phase, uint64_t interims,
                           uint64_t done) {
  uint64_t next = (state & ~(uint64_t)(CNM_REPLAY_PHASE | CNM_REPLAY_INTERIMS | CNM_REPLAY_PARTIAL)) +
                  (done << CNM_REPLAY_COUNT_SHIFT) + interims + phase;
  return __atomic_compare_exchange_n(&head->replay_state, &state, next, false, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED);
}

/* The bytes of the interim answers `state` counts. */
static inline uint64_t interim_bytes(uint64_t state) {
  return (state & CNM_REPLAY_INTERIMS) / CNM_REPLAY_INTERIM_ONE * CNM_REPLAY_INTERIM_LENGTH;
}

/* The next bytes of the chunked body of the request under way, from `skip` in the call: the
 * body's (1 left until it ended), or false when they are not (more than the body is Swift's). */
static bool take_chunked_request_body(cnm_connection_head *head, const void *buffer, const struct iovec *vector,
                                      int vector_count, size_t skip, size_t count) {
  cnm_chunked_outcome outcome = read_chunked(&head->replay_request_chunked, buffer, vector, vector_count, skip, count);
  if (outcome == CNM_CHUNKED_REFUSED) return false;
  head->replay_request_body_left = outcome == CNM_CHUNKED_GOES_ON;
  return true;
}

/* A request whose head ends `skip` bytes into this call: its body from there, in this call and
 * any that follow, only counted, as the parser counts a body of known length, or, when chunked,
 * read for its framing; then its response. More than the body (a pipelined request) is Swift's. */
static bool begin_request(cnm_connection_head *head, uint64_t state, const void *buffer, const struct iovec *vector,
                          int vector_count, size_t skip, size_t count) {
  if (head->replay_request.framing.chunked_at) {
    head->replay_request_chunked = (cnm_chunked_body){0};
    if (!take_chunked_request_body(head, buffer, vector, vector_count, skip, count)) return false;
  } else {
    uint64_t body = count - skip;
    if (body > head->replay_request.framing.content_length) return false;
    head->replay_request_body_left = head->replay_request.framing.content_length - body;
  }
  return advance(head, state, CNM_REPLAY_REQUESTED, 0, 0);
}

/* The first part of a request head that goes on in the next calls (cnm_simple_request_begins):
 * kept until its blank line comes. */
static bool stage_head(cnm_connection_head *head, uint64_t state, const unsigned char *bytes, size_t count) {
  memcpy(head->replay_request_staging, bytes, count);
  head->replay_request_staged = count;
  head->replay_start = cnm_monotonic_ns();
  return __atomic_compare_exchange_n(&head->replay_state, &state, state | CNM_REPLAY_PARTIAL, false, __ATOMIC_ACQ_REL,
                                     __ATOMIC_RELAXED);
}

/* The next part of a staged request head (`bytes`, the whole call): kept too while the head goes
 * on; read with the staged part once its blank line came (beside the last head, as a head in one
 * call is; it began at replay_start), then its body. A head longer than the hooks read, or not
 * simple, is Swift's. */
static bool take_rest_of_head(cnm_connection_head *head, uint64_t state, const unsigned char *bytes,
                              const void *buffer, const struct iovec *vector, int vector_count, size_t count) {
  unsigned char *staged = head->replay_request_staging;
  size_t before = head->replay_request_staged, room = CNM_SIMPLE_HEAD_CAPACITY - before;
  size_t copied = count < room ? count : room;
  memcpy(staged + before, bytes, copied);
  if (!cnm_simple_head_ends(staged, before, before + copied)) { /* it goes on */
    if (copied < count) return false;
    head->replay_request_staged = before + count;
    return true;
  }
  if (!cnm_read_simple_request(staged, before + copied, &head->replay_request, head->replay_request_bytes))
    return false;
  head->replay.run_length = 0; /* its head is written into the template at its record */
  return begin_request(head, state, buffer, vector, vector_count, head->replay_request.length - before, count);
}

/* The request: a simple head at the start of this call (the last one again, or read now, or the
 * rest of one begun in the calls before), then its body (begin_request). */
static bool take_request(cnm_connection_head *head, uint64_t state, const void *buffer, const struct iovec *vector,
                         int vector_count, size_t count) {
  if ((state & CNM_REPLAY_PHASE) == CNM_REPLAY_REQUESTED) { /* its body's next bytes */
    if (head->replay_request.framing.chunked_at) /* while it goes on */
      return head->replay_request_body_left && take_chunked_request_body(head, buffer, vector, vector_count, 0, count);
    if (count > head->replay_request_body_left) return false;
    head->replay_request_body_left -= count;
    return true;
  }
  size_t available;
  const unsigned char *bytes = first_bytes(buffer, vector, vector_count, count, &available);
  if ((state & CNM_REPLAY_PHASE) != CNM_REPLAY_ARMED || !bytes || available != count) return false;
  if (state & CNM_REPLAY_PARTIAL) return take_rest_of_head(head, state, bytes, buffer, vector, vector_count, count);
  /* The last head again is compared only where it can be: a call of its length, or longer when a
   * body follows it (a GET's call of another length, every call of varied traffic, is not). */
  size_t length = head->replay_request.length;
  bool has_body = head->replay_request.framing.content_length || head->replay_request.framing.chunked_at;
  bool same = length && (count == length || (count > length && has_body)) &&
              memcmp(bytes, head->replay_request_bytes, length) == 0;
  if (!same) {
    /* A call of 1 KiB or more without a blank line begins a head (nginx reads 1 KiB first): kept,
     * not read in vain. */
    if (count >= 1024 && memcmp(bytes + count - 4, "\r\n\r\n", 4) != 0 && cnm_simple_request_begins(bytes, count))
      return stage_head(head, state, bytes, count);
    if (!cnm_read_simple_request(bytes, count, &head->replay_request, head->replay_request_bytes))
      return cnm_simple_request_begins(bytes, count) && stage_head(head, state, bytes, count);
    head->replay.run_length = 0; /* its head is written into the template at its record */
    length = head->replay_request.length;
  }
  head->replay_start = cnm_monotonic_ns();
  return begin_request(head, state, buffer, vector, vector_count, length, count);
}

/* Its response: interim answers (a 100 Continue, perhaps before the request's body) at the start
 * of this call, then a simple head, then its body (if it has one), in this call and any that
 * follow; the body is only counted, as the parser only counts a body of known length, or, when
 * chunked, read for its framing (chunked_body.c). Its last byte makes the record, or, for a body
 * that runs to the close, the close (cnm_replay_end_at_close). More than the body (the next
 * response's bytes) is Swift's. */
static bool take_response(cnm_connection_head *head, uint64_t state, const void *buffer,
                          const struct iovec *vector, int vector_count, size_t count) {
  uint64_t now, total, interims = state & CNM_REPLAY_INTERIMS;
  /* No request taken: its request went to Swift (sent on another thread, or not simple), which
   * has yet to stop the replay, and so must this answer. */
  if ((state & CNM_REPLAY_PHASE) == CNM_REPLAY_ARMED) return false;
  if ((state & CNM_REPLAY_PHASE) == CNM_REPLAY_REQUESTED) {
    size_t available;
    const unsigned char *bytes = first_bytes(buffer, vector, vector_count, count, &available);
    if (!bytes) return false;
    size_t skip = 0; /* the interim answers' bytes in this call */
    while (available - skip >= CNM_REPLAY_INTERIM_LENGTH &&
           memcmp(bytes + skip, CNM_REPLAY_INTERIM, CNM_REPLAY_INTERIM_LENGTH) == 0) {
      if (interims == CNM_REPLAY_INTERIMS) return false; /* a fourth */
      interims += CNM_REPLAY_INTERIM_ONE;
      skip += CNM_REPLAY_INTERIM_LENGTH;
    }
    if (skip && skip == count) { /* interim answers alone */
      if (!(state & CNM_REPLAY_INTERIMS)) head->replay_first_byte = cnm_monotonic_ns();
      return advance(head, state, CNM_REPLAY_REQUESTED, interims, 0);
    }
    if (head->replay_request_body_left) return false; /* an answer before the request's end */
    /* The response head after them: the last one again, or a simple one read now. */
    if (!cnm_read_simple_response(bytes + skip, available - skip, &head->replay_response, head->replay_response_bytes))
      return false;
    size_t length = skip + head->replay_response.length; /* the heads' bytes in this call */
    uint64_t body = response_body(head);
    bool goes_on;
    if (body == BODY_TO_CLOSE) {
      head->replay_body_to_close = count - length;
      goes_on = true;
      total = count - skip;
    } else if (body == BODY_CHUNKED) {
      cnm_chunked_body *chunked = &head->replay_chunked;
      *chunked = (cnm_chunked_body){0};
      cnm_chunked_outcome outcome = read_chunked(chunked, buffer, vector, vector_count, length, count);
      if (outcome == CNM_CHUNKED_REFUSED) return false;
      goes_on = outcome == CNM_CHUNKED_GOES_ON;
      total = count - skip;
    } else {
      if (count > length + body) return false;
      goes_on = count < length + body;
      head->replay_body_left = length + body - count;
      total = head->replay_response.length + body;
    }
    now = cnm_monotonic_ns();
    if (!(state & CNM_REPLAY_INTERIMS)) head->replay_first_byte = now; /* the first answer's first byte */
    if (goes_on) return advance(head, state, CNM_REPLAY_RESPONDING, interims, 0);
  } else if (!head->replay_response.framing.framed_at && !head->replay_response.framing.chunked_at) {
    /* A response under way has a body: this one runs to the close, every byte its. */
    head->replay_body_to_close += count;
    return true;
  } else if (head->replay_response.framing.chunked_at) {
    cnm_chunked_body *chunked = &head->replay_chunked;
    cnm_chunked_outcome outcome = read_chunked(chunked, buffer, vector, vector_count, 0, count);
    if (outcome == CNM_CHUNKED_REFUSED) return false;
    if (outcome == CNM_CHUNKED_GOES_ON) return true;
    now = cnm_monotonic_ns();
    total = head->replay_response.length + chunked->bytes;
  } else {
    if (count > head->replay_body_left) return false;
    if (count < head->replay_body_left) {
      head->replay_body_left -= count;
      return true;
    }
    now = cnm_monotonic_ns();
    /* A response under way has a body its Content-Length frames. */
    total = head->replay_response.length + head->replay_response.framing.content_length;
  }
  if (!advance(head, state, CNM_REPLAY_ARMED, 0, 1)) return false;
  record(head, head->replay_start, head->replay_first_byte, now, interim_bytes(interims) + total);
  return true;
}

/* Takes a call of a simple exchange, or refuses it (false): the owner's, moving the request
 * direction's bytes or the response direction's. */
static bool take(cnm_connection_head *head, bool received, const void *buffer, const struct iovec *vector,
                 int vector_count, size_t count) {
  uint64_t state = __atomic_load_n(&head->replay_state, __ATOMIC_ACQUIRE);
  if (head->replay_owner != cnm_thread_identity()) return false;
  return received == (head->requests_received != 0)
             ? take_request(head, state, buffer, vector, vector_count, count)
             : take_response(head, state, buffer, vector, vector_count, count);
}

void cnm_replay_take(cnm_connection_head *head, bool received, const void *buffer, const struct iovec *vector,
                     int vector_count, ssize_t result) {
  /* A TLS connection's exchanges are in its plaintext (cnm_replay_take_plaintext), and so are
   * those of a socket call an SSL call makes. */
  if (!head->is_tls && !cnm_current_ssl && take(head, received, buffer, vector, vector_count, (size_t)result)) {
    cnm_count_bytes(head, received, (uint64_t)result);
    return;
  }
  cnm_hand_to_swift(head, received, buffer, vector, vector_count, result);
}

bool cnm_replay_end_at_close(cnm_connection_head *head) {
  uint64_t state = __atomic_load_n(&head->replay_state, __ATOMIC_ACQUIRE);
  const cnm_simple_response *response = &head->replay_response;
  if ((state & CNM_REPLAY_PHASE) != CNM_REPLAY_RESPONDING || response->framing.framed_at || response->framing.chunked_at) return false;
  uint64_t now = cnm_monotonic_ns();
  if (!advance(head, state, CNM_REPLAY_ARMED, 0, 1)) return false;
  record(head, head->replay_start, head->replay_first_byte, now,
         interim_bytes(state) + response->length + head->replay_body_to_close);
  return true;
}

bool cnm_replay_take_plaintext(cnm_connection_head *head, bool received, const void *buffer, size_t count) {
  if ((__atomic_load_n(&head->replay_state, __ATOMIC_RELAXED) & CNM_REPLAY_PHASE) == CNM_REPLAY_OFF) return false;
  return take(head, received, buffer, NULL, 0, count);
}
