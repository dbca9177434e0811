/* A connection's streams, read from its frames (chttp2.h). Each direction's frames come here from
 * the thread that moves its bytes; a stream's `state` is the one word both directions write. */
#include "chttp2.h"

#include <pthread.h>
#include <sched.h>
#include <stddef.h>
#include <string.h>

_Static_assert(sizeof(ch2_stream) == 1024 && offsetof(ch2_connection, table) == 0 &&
                   offsetof(ch2_stream_table, streams) == 0,
               "a stream slot is 16 cache lines of a 64-byte aligned connection or table");

/* ---- a stream's halves --------------------------------------------------------------------------- */

/* Both halves of stream `tag` ended: it was recorded. */
static inline int is_recorded(const ch2_stream *stream, uint64_t tag) {
  uint64_t state = __atomic_load_n(&stream->state, __ATOMIC_ACQUIRE);
  return (state & ~(uint64_t)7) == tag && (state & 3) == 3;
}

/* See chttp2.h. */
int ch2_stream_claim_request_half(ch2_stream *stream, uint64_t tag) {
  if (stream->request_tag == tag) return !is_recorded(stream, tag);
  if (is_recorded(stream, tag)) return 0;
  stream->request_tag = tag;
  stream->start = 0;
  stream->request_bytes = 0;
  stream->ordinal = 0;
  stream->has_head = 0;
  stream->is_grpc = 0;
  stream->request_reset = 0;
  return 1;
}

/* The response half is stream `tag`'s: made fresh if it was another's. 0 when the stream was
 * recorded already. */
static int claim_response_half(ch2_stream *stream, uint64_t tag) {
  if (stream->response_tag == tag) return !is_recorded(stream, tag);
  if (is_recorded(stream, tag)) return 0;
  stream->response_tag = tag;
  stream->first_byte = 0;
  stream->response_bytes = 0;
  stream->status = 0;
  stream->grpc_status = -1;
  stream->response_complete = 0;
  stream->grpc_message_length = 0;
  stream->response_reset = 0;
  return 1;
}

/* See chttp2.h. */
int ch2_stream_end(ch2_stream *stream, uint64_t halves, uint64_t tag) {
  uint64_t current = __atomic_load_n(&stream->state, __ATOMIC_ACQUIRE);
  for (;;) {
    uint64_t base = (current & ~(uint64_t)7) == tag ? current : tag;
    if ((base & 3) == 3) return 0;
    uint64_t next = base | halves;
    if (__atomic_compare_exchange_n(&stream->state, &current, next, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
      return (next & 3) == 3;
  }
}

/* ---- the slots (chttp2.h) ------------------------------------------------------------------------- */

static inline uint32_t entry_id(uint64_t entry) { return (uint32_t)(entry >> CH2_PLACE_ID_SHIFT); }
static inline uint32_t entry_slot(uint64_t entry) { return (uint32_t)(entry & 0xFF); }
static inline uint64_t place_entry(uint32_t id, uint32_t slot, uint64_t flags) {
  return (uint64_t)id << CH2_PLACE_ID_SHIFT | flags | slot;
}
/* Whether a place holding `entry` holds a stream of `id`'s side newer than `id`: then `id`, found
 * nowhere, was recorded and its place taken since (a late frame), for stream ids only grow. */
static inline int holds_newer(uint64_t entry, uint32_t id) {
  uint32_t held_by = entry_id(entry);
  return held_by > id && (held_by & 1) == (id & 1);
}
/* Whether a place holding `entry` holds no open stream. */
static inline int is_free(uint64_t entry) { return entry == 0 || entry_slot(entry) == CH2_NO_SLOT; }

/* A free slot of `table` off its stack, the one freed last; else one never used; CH2_NO_SLOT when
 * none is left. (The count in `free_slots` changes with every pop and push: a pop that read
 * `next_free` of a slot popped and pushed again meanwhile fails its compare-and-swap.) */
static uint32_t take_free_slot(ch2_stream_table *table) {
  uint64_t top = __atomic_load_n(&table->free_slots, __ATOMIC_ACQUIRE);
  for (uint32_t slot; (slot = (uint32_t)(top & 0xFF)) != CH2_NO_SLOT;) {
    uint64_t next = ((top & ~(uint64_t)0xFF) + 0x100) | __atomic_load_n(&table->next_free[slot], __ATOMIC_RELAXED);
    if (__atomic_compare_exchange_n(&table->free_slots, &top, next, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
      return slot;
  }
  uint32_t fresh = __atomic_load_n(&table->slots_never_used, __ATOMIC_RELAXED);
  while (fresh < CH2_STREAM_CAPACITY) {
    if (__atomic_compare_exchange_n(&table->slots_never_used, &fresh, fresh + 1, 0, __ATOMIC_RELAXED,
                                    __ATOMIC_RELAXED)) {
      /* Of no stream yet: a borrowed table's slots may hold tags of another pool's connections. */
      ch2_stream *stream = &table->streams[fresh];
      __atomic_store_n(&stream->state, 0, __ATOMIC_RELAXED);
      stream->request_tag = stream->response_tag = 0;
      return fresh;
    }
  }
  return CH2_NO_SLOT;
}

/* `slot` onto `table`'s free stack. */
static void give_back_slot(ch2_stream_table *table, uint32_t slot) {
  uint64_t top = __atomic_load_n(&table->free_slots, __ATOMIC_RELAXED);
  uint64_t next;
  do {
    __atomic_store_n(&table->next_free[slot], (uint8_t)(top & 0xFF), __ATOMIC_RELAXED);
    next = ((top & ~(uint64_t)0xFF) + 0x100) | slot;
  } while (!__atomic_compare_exchange_n(&table->free_slots, &top, next, 0, __ATOMIC_RELEASE, __ATOMIC_RELAXED));
}

/* `table` holding no stream. */
static void clear_table(ch2_stream_table *table) {
  table->free_slots = CH2_NO_SLOT;
  table->slots_never_used = 0;
  memset(table->stream_map, 0, sizeof table->stream_map);
}

/* The place of a borrowed table that holds stream `id` (open or recorded), that table, and what
 * the place held; NULL when none does. */
static uint64_t *borrowed_place(ch2_connection *connection, uint32_t id, ch2_stream_table **table, uint64_t *entry) {
  uint32_t count = __atomic_load_n(&connection->borrowed_count, __ATOMIC_ACQUIRE), place = ch2_stream_place(id);
  for (uint32_t i = 0; i < count; i++) {
    uint64_t *at = &connection->borrowed[i]->stream_map[place];
    *entry = __atomic_load_n(at, __ATOMIC_ACQUIRE);
    if (entry_id(*entry) == id) {
      *table = connection->borrowed[i];
      return at;
    }
  }
  return NULL;
}

/* The slot of `table` that `entry`, a place holding its stream, names; NULL when that stream was
 * recorded. */
static inline ch2_stream *held_slot(ch2_stream_table *table, uint64_t entry) {
  return entry_slot(entry) == CH2_NO_SLOT ? NULL : &table->streams[entry_slot(entry)];
}

/* See chttp2.h. */
ch2_stream *ch2_stream_find_borrowed(ch2_connection *connection, uint32_t id) {
  ch2_stream_table *table;
  uint64_t entry;
  return borrowed_place(connection, id, &table, &entry) ? held_slot(table, entry) : NULL;
}

/* Opening a stream at a place of one table. */
typedef enum { OPENED, HELD, STALE } place_outcome;

/* Stream `id` opened at `place` of `table`, which holds `flags` (kept): OPENED with `*stream`
 * when the place was free (or held `id` already: `*stream` NULL when that one was recorded), HELD
 * when an older stream still open holds it, STALE when a newer stream of the side does. */
static place_outcome open_at(ch2_stream_table *table, uint64_t *place, uint32_t id, uint64_t flags,
                             ch2_stream **stream) {
  uint64_t entry = __atomic_load_n(place, __ATOMIC_ACQUIRE);
  for (;;) {
    uint32_t slot = entry_slot(entry);
    if (entry_id(entry) == id) {
      *stream = held_slot(table, entry);
      return OPENED;
    }
    if (holds_newer(entry, id)) return STALE;
    if (!is_free(entry)) return HELD;
    /* No slot with a free place: a stream freeing one has cleared its place, not yet pushed it. */
    if ((slot = take_free_slot(table)) == CH2_NO_SLOT) return HELD;
    if (__atomic_compare_exchange_n(place, &entry, place_entry(id, slot, flags), 0, __ATOMIC_ACQ_REL,
                                    __ATOMIC_ACQUIRE)) {
      *stream = &table->streams[slot];
      return OPENED;
    }
    give_back_slot(table, slot);
  }
}

/* Takes the lock for opening at spilled places, held by the thread in `spill_lock`. False, at once,
 * when this thread holds it (a signal handler's call interrupted it there): the frame then opens
 * nothing rather than wait on itself. Another thread holding it is inside a few dozen
 * instructions, or preempted there: this one waits, yielding its CPU after a while. */
static int lock_spills(ch2_connection *connection) {
  uint64_t self = (uint64_t)pthread_self();
  for (uint32_t turn = 0;; turn++) {
    uint64_t holder = 0;
    if (__atomic_compare_exchange_n(&connection->spill_lock, &holder, self, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
      return 1;
    if (holder == self) return 0;
    if (turn < 64) {
#if defined(__x86_64__)
      __builtin_ia32_pause();
#elif defined(__aarch64__)
      __asm__ volatile("yield");
#endif
    } else {
      sched_yield();
    }
  }
}

static void unlock_spills(ch2_connection *connection) { __atomic_store_n(&connection->spill_lock, 0, __ATOMIC_RELEASE); }

/* Stream `id` opened in a borrowed table (one more borrowed when each holds an older stream at its
 * place), else at its spilled place of the connection's own table: free by now, or taken over
 * from the older stream there. Under the lock. */
static ch2_stream *open_spilled_locked(ch2_connection *connection, uint32_t id) {
  ch2_stream_table *table;
  uint64_t entry;
  if (borrowed_place(connection, id, &table, &entry)) return held_slot(table, entry);
  uint32_t place = ch2_stream_place(id);
  uint64_t *own = &connection->table.stream_map[place];
  ch2_stream *stream = NULL;
  switch (open_at(&connection->table, own, id, CH2_PLACE_SPILLED, &stream)) {
  case OPENED: return stream;
  case STALE: return NULL;
  case HELD: break;
  }
  uint32_t count = connection->borrowed_count;
  for (uint32_t i = 0; i < count; i++) {
    switch (open_at(connection->borrowed[i], &connection->borrowed[i]->stream_map[place], id, 0, &stream)) {
    case OPENED: return stream;
    case STALE: return NULL;
    case HELD: break;
    }
  }
  table = count < CH2_BORROWED_TABLES && connection->callbacks->more_slots ? connection->callbacks->more_slots() : NULL;
  if (table) {
    clear_table(table);
    uint32_t slot = take_free_slot(table);
    table->stream_map[place] = place_entry(id, slot, 0);
    connection->borrowed[count] = table;
    __atomic_store_n(&connection->borrowed_count, count + 1, __ATOMIC_RELEASE);
    return &table->streams[slot];
  }
  /* Nowhere to go: the older stream at the own table's place is given up for this one. */
  entry = __atomic_load_n(own, __ATOMIC_ACQUIRE);
  while (!is_free(entry)) {
    if (__atomic_compare_exchange_n(own, &entry, place_entry(id, entry_slot(entry), CH2_PLACE_SPILLED), 0,
                                    __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
      __atomic_add_fetch(&connection->streams_lost, 1, __ATOMIC_RELAXED);
      return &connection->table.streams[entry_slot(entry)];
    }
  }
  /* Freed meanwhile. */
  return open_at(&connection->table, own, id, CH2_PLACE_SPILLED, &stream) == OPENED ? stream : NULL;
}

static ch2_stream *open_spilled(ch2_connection *connection, uint32_t id) {
  if (!lock_spills(connection)) return NULL;
  ch2_stream *stream = open_spilled_locked(connection, id);
  unlock_spills(connection);
  return stream;
}

/* See chttp2.h. A place keeps a recorded stream's id (with CH2_NO_SLOT) until a newer stream
 * takes the place: a late frame of that stream opens nothing. A stream opens in the connection's
 * own table without a lock unless its place is spilled: marking a place spilled and opening there
 * are compare-and-swaps of the same word, so a stream never opens in two tables. */
ch2_stream *ch2_stream_open(ch2_connection *connection, uint32_t id) {
  ch2_stream_table *own = &connection->table;
  uint64_t *place = &own->stream_map[ch2_stream_place(id)];
  uint64_t entry = __atomic_load_n(place, __ATOMIC_ACQUIRE);
  for (;;) {
    uint32_t slot = entry_slot(entry);
    if (entry_id(entry) == id) return held_slot(own, entry);
    if (entry & CH2_PLACE_SPILLED) return open_spilled(connection, id);
    if (holds_newer(entry, id)) return NULL; /* older than the place's stream */
    int taken = is_free(entry);
    if (!taken) {
      /* An older stream still open: this one opens elsewhere, or takes its slot over. */
      if (__atomic_compare_exchange_n(place, &entry, entry | CH2_PLACE_SPILLED, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
        return open_spilled(connection, id);
      continue;
    }
    if ((slot = take_free_slot(own)) == CH2_NO_SLOT) return NULL;
    if (__atomic_compare_exchange_n(place, &entry, place_entry(id, slot, 0), 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
      return &own->streams[slot];
    give_back_slot(own, slot);
  }
}

/* Stream `id`, at `place` of `table` (which held `entry`), gives its slot back (unless a newer
 * stream took it over). */
static inline void release_at(ch2_stream_table *table, uint64_t *place, uint64_t entry, uint32_t id) {
  while (entry_id(entry) == id && entry_slot(entry) != CH2_NO_SLOT) {
    if (__atomic_compare_exchange_n(place, &entry, (entry & ~(uint64_t)0xFF) | CH2_NO_SLOT, 0, __ATOMIC_ACQ_REL,
                                    __ATOMIC_ACQUIRE)) {
      give_back_slot(table, entry_slot(entry));
      return;
    }
  }
}

/* See chttp2.h. */
void ch2_stream_release(ch2_connection *connection, uint32_t id) {
  uint64_t *place = &connection->table.stream_map[ch2_stream_place(id)];
  uint64_t entry = __atomic_load_n(place, __ATOMIC_ACQUIRE);
  if (entry_id(entry) == id) {
    release_at(&connection->table, place, entry, id);
  } else if (entry & CH2_PLACE_SPILLED) {
    ch2_stream_table *table;
    if ((place = borrowed_place(connection, id, &table, &entry))) release_at(table, place, entry, id);
  }
}

/* ---- the frames ------------------------------------------------------------------------------------ */

/* What a read of one direction passes along. */
typedef struct reading {
  ch2_connection *connection;
  uint64_t now;
  void *context;
} reading;

/* The request direction (the client's frames) or the response direction (the server's). */
static inline ch2_direction *direction(ch2_connection *connection, int requests) {
  return requests ? &connection->requests : &connection->responses;
}

/* Stream `id` in `stream` ended, by the request direction or the response direction (`by`, the
 * counter it adds to): recorded, and its slot given back. */
static void record(const reading *read, ch2_stream *stream, uint32_t id, uint32_t *by) {
  (*by)++;
  read->connection->callbacks->record(read->context, read->connection, stream, id, read->now);
  ch2_stream_release(read->connection, id);
}

/* The request half opens at `now`, the connection's next stream. */
static void open_request(ch2_connection *connection, ch2_stream *stream, uint64_t now) {
  stream->start = now;
  stream->ordinal = __atomic_fetch_add(&connection->streams_opened, 1, __ATOMIC_RELAXED);
}

/* Ends, as not complete, the streams of `table` past `last` that the client (`opened_by_client` 1)
 * or the server (0) opened, or both (-1). */
static void end_streams_of(const reading *read, ch2_stream_table *table, uint32_t last, int opened_by_client,
                           uint32_t *by) {
  for (uint32_t place = 0; place < CH2_STREAM_CAPACITY; place++) {
    uint64_t entry = __atomic_load_n(&table->stream_map[place], __ATOMIC_ACQUIRE);
    uint32_t id = entry_id(entry);
    if (is_free(entry) || id <= last) continue;
    if (opened_by_client >= 0 && (int)(id & 1) != opened_by_client) continue;
    ch2_stream *stream = &table->streams[entry_slot(entry)];
    uint64_t halves = CH2_REQUEST_ENDED | CH2_RESPONSE_ENDED | CH2_RESET;
    if (ch2_stream_end(stream, halves, ch2_stream_tag(read->connection, id))) record(read, stream, id, by);
  }
}

/* Ends, as not complete, the streams past `last` that the client (`opened_by_client` 1) or the
 * server (0) opened, or both (-1): a GOAWAY's refusal, or every stream still open at the close. */
static void end_streams(const reading *read, uint32_t last, int opened_by_client, uint32_t *by) {
  ch2_connection *connection = read->connection;
  end_streams_of(read, &connection->table, last, opened_by_client, by);
  uint32_t count = __atomic_load_n(&connection->borrowed_count, __ATOMIC_ACQUIRE);
  for (uint32_t i = 0; i < count; i++) end_streams_of(read, connection->borrowed[i], last, opened_by_client, by);
}

/* GOAWAY: the streams the other side opened past the last one the sender processed never will be.
 * (SETTINGS, PING and WINDOW_UPDATE on stream 0 say nothing a record needs: the decoders follow
 * the encoders' size updates, hpack.c.) Out of line: a connection's own frames are few beside its
 * streams'. */
__attribute__((noinline)) static void connection_frame(const reading *read, const ch2_event *event, int requests) {
  ch2_connection *connection = read->connection;
  if (event->type == CH2_GOAWAY) {
    end_streams(read, event->last_stream_id, !requests,
                requests ? &connection->recorded_by_requests : &connection->recorded_by_responses);
  }
}

/* The slot of the stream a frame is of: found in line; opened (out of line) only by HEADERS. */
static inline ch2_stream *stream_of_frame(ch2_connection *connection, const ch2_event *event, uint32_t id) {
  ch2_stream *stream = ch2_stream_find(connection, id);
  return stream || event->type != CH2_HEADERS ? stream : ch2_stream_open(connection, id);
}

/* Whether a request's content-type makes it a gRPC call: `application/grpc`, alone or followed by
 * `+format` or parameters (not gRPC-Web's `application/grpc-web`, whose status is in its body). */
static inline uint8_t is_grpc(const ch2_fields *fields) {
  static const char type[] = "application/grpc";
  size_t length = fields->content_type_length;
  if (length < sizeof type - 1 || memcmp(fields->content_type, type, sizeof type - 1) != 0) return 0;
  return length == sizeof type - 1 || fields->content_type[sizeof type - 1] == '+' ||
         fields->content_type[sizeof type - 1] == ';';
}

/* A RST_STREAM's error code as a stream keeps it: 1 + the code, 255 for any above 253. */
static inline uint8_t reset_code(uint32_t error_code) { return error_code < 254 ? (uint8_t)(error_code + 1) : 255; }

/* See chttp2.h. Out of line: most streams are no gRPC call, and most calls end with a status. */
__attribute__((noinline)) int16_t ch2_grpc_status_of_end(const ch2_stream *stream, int has_response) {
  enum { CANCELLED = 1, UNKNOWN = 2, PERMISSION_DENIED = 7, RESOURCE_EXHAUSTED = 8, UNIMPLEMENTED = 12,
         INTERNAL = 13, UNAVAILABLE = 14, UNAUTHENTICATED = 16 };
  unsigned reset = has_response && stream->response_reset ? stream->response_reset : stream->request_reset;
  if (reset) {
    switch (reset - 1) {
    case 0x7: return UNAVAILABLE;        /* REFUSED_STREAM */
    case 0x8: return CANCELLED;          /* CANCEL */
    case 0xb: return RESOURCE_EXHAUSTED; /* ENHANCE_YOUR_CALM */
    case 0xc: return PERMISSION_DENIED;  /* INADEQUATE_SECURITY */
    default: return INTERNAL;
    }
  }
  uint16_t status = has_response ? stream->status : 0;
  switch (status) {
  case 0: return UNAVAILABLE; /* no response: the connection's end, or a GOAWAY, cut it short */
  case 200: return stream->response_complete ? UNKNOWN : UNAVAILABLE;
  case 400: return INTERNAL;
  case 401: return UNAUTHENTICATED;
  case 403: return PERMISSION_DENIED;
  case 404: return UNIMPLEMENTED;
  case 429: case 502: case 503: case 504: return UNAVAILABLE;
  default: return UNKNOWN;
  }
}

static void request_frame(const reading *read, const ch2_event *event, uint32_t id) {
  ch2_connection *connection = read->connection;
  ch2_stream *stream = stream_of_frame(connection, event, id);
  if (!stream) return;
  uint64_t tag = ch2_stream_tag(connection, id);
  if (stream->request_tag != tag) {
    /* Only HEADERS opens a stream: a PRIORITY frame for an idle stream (nghttp's anchors) or a
     * WINDOW_UPDATE after the end opens nothing. */
    if (event->type != CH2_HEADERS || !ch2_stream_claim_request_half(stream, tag)) return;
    open_request(connection, stream, read->now);
  } else if (is_recorded(stream, tag)) {
    return;
  }
  stream->request_bytes += event->frame_bytes;
  if (event->has_block && !stream->has_head) {
    stream->is_grpc = is_grpc(&connection->requests.decoder.fields);
    connection->callbacks->take_request_head(read->context, connection, stream, &connection->requests.decoder.fields);
  }
  if (event->type == CH2_RST_STREAM) stream->request_reset = reset_code(event->error_code);
  uint64_t halves = event->type == CH2_RST_STREAM ? CH2_REQUEST_ENDED | CH2_RESPONSE_ENDED | CH2_RESET
                    : event->end_stream          ? CH2_REQUEST_ENDED
                                                 : 0;
  if (halves && ch2_stream_end(stream, halves, tag)) record(read, stream, id, &connection->recorded_by_requests);
}

/* A PUSH_PROMISE's header block: the request of the stream it promises, which the server opens.
 * Out of line: rare. */
__attribute__((noinline)) static void promised(const reading *read, uint32_t id, const ch2_fields *request) {
  ch2_connection *connection = read->connection;
  ch2_stream *stream = id == 0 ? NULL : ch2_stream_open(connection, id);
  uint64_t tag = ch2_stream_tag(connection, id);
  if (!stream || !ch2_stream_claim_request_half(stream, tag)) return;
  open_request(connection, stream, read->now);
  connection->callbacks->take_request_head(read->context, connection, stream, request);
  (void)ch2_stream_end(stream, CH2_REQUEST_ENDED, tag); /* its response is still to come */
}

/* A response header block: the final status (a 1xx only until it comes), and a gRPC call's status
 * and message (trailers, or the headers of a trailers-only response). */
static void take_response_fields(ch2_stream *stream, const ch2_fields *fields) {
  if (fields->status != 0 && (stream->status == 0 || stream->status < 200)) stream->status = fields->status;
  if (fields->grpc_status >= 0) {
    stream->grpc_status = fields->grpc_status;
    uint8_t length = (uint8_t)(fields->grpc_message_length < CH2_GRPC_MESSAGE_BYTES ? fields->grpc_message_length
                                                                                     : CH2_GRPC_MESSAGE_BYTES);
    memcpy(stream->grpc_message, fields->grpc_message, length);
    stream->grpc_message_length = length;
  }
}

static void response_frame(const reading *read, const ch2_event *event, uint32_t id) {
  ch2_connection *connection = read->connection;
  ch2_stream *stream = stream_of_frame(connection, event, id);
  if (!stream) return;
  uint64_t tag = ch2_stream_tag(connection, id);
  if (stream->response_tag != tag) {
    /* A response begins with HEADERS; a RST_STREAM ends a stream the other side opened. */
    int opens = event->type == CH2_HEADERS || stream->request_tag == tag;
    if (!opens || !claim_response_half(stream, tag)) return;
  } else if (is_recorded(stream, tag)) {
    return;
  }
  stream->response_bytes += event->frame_bytes;
  if (event->type == CH2_HEADERS && stream->first_byte == 0) stream->first_byte = read->now;
  if (event->has_block) {
    if (event->block_is_push) {
      promised(read, event->promised_stream_id, &connection->responses.decoder.fields);
    } else {
      take_response_fields(stream, &connection->responses.decoder.fields);
    }
  }
  uint64_t halves;
  if (event->type == CH2_RST_STREAM) {
    stream->response_reset = reset_code(event->error_code);
    halves = CH2_REQUEST_ENDED | CH2_RESPONSE_ENDED | CH2_RESET;
  } else if (event->end_stream) {
    stream->response_complete = 1;
    halves = CH2_RESPONSE_ENDED;
  } else {
    return;
  }
  if (ch2_stream_end(stream, halves, tag)) record(read, stream, id, &connection->recorded_by_responses);
}

/* A frame of the request direction (`requests`) or the response direction ended. Returns the
 * status that stops the direction (a header block that does not decode), or CH2_OK. */
static ch2_status frame_ended(const reading *read, const ch2_event *event, int requests) {
  ch2_direction *read_direction = direction(read->connection, requests);
  /* Every header block is decoded, whatever its stream: the table must stay the encoder's. */
  if (event->has_block) {
    ch2_status status = ch2_hpack_decode(&read_direction->decoder, ch2_reader_block(&read_direction->reader),
                                         read_direction->reader.block_length);
    if (status != CH2_OK) return status;
  }
  uint32_t id = event->stream_id;
  if (id == 0) {
    connection_frame(read, event, requests);
  } else if (requests) {
    request_frame(read, event, id);
  } else {
    response_frame(read, event, id);
  }
  return CH2_OK;
}

/* ---- the interface (chttp2.h) -------------------------------------------------------------------- */

/* See chttp2.h. */
void ch2_connection_start(ch2_connection *connection, uint32_t generation, const ch2_stream_callbacks *callbacks) {
  connection->callbacks = callbacks;
  connection->generation = generation;
  connection->streams_opened = 0;
  connection->recorded_by_requests = connection->recorded_by_responses = connection->recorded_at_finish = 0;
  connection->streams_lost = 0;
  clear_table(&connection->table);
  connection->borrowed_count = 0;
  connection->spill_lock = 0;
  ch2_reader_init(&connection->requests.reader, 1); /* the client's frames follow its preface */
  ch2_hpack_init(&connection->requests.decoder);
  ch2_reader_init(&connection->responses.reader, 0);
  ch2_hpack_init(&connection->responses.decoder);
}

/* Reads `count` bytes of one direction (`reader`, the request direction's when `requests`). */
static ch2_status read_bytes(const reading *read, ch2_reader *reader, int requests, const uint8_t *bytes,
                             size_t count) {
  while (count > 0) {
    ch2_event event;
    size_t taken = ch2_read(reader, bytes, count, &event);
    bytes += taken;
    count -= taken;
    if (event.kind == CH2_EVENT_FRAME) {
      ch2_status status = frame_ended(read, &event, requests);
      if (status != CH2_OK) return status;
    } else if (event.kind == CH2_EVENT_ERROR) {
      return (ch2_status)reader->status;
    }
  }
  return CH2_OK;
}

/* See chttp2.h. */
ch2_status ch2_connection_read(ch2_connection *connection, int requests, const uint8_t *bytes, size_t count,
                               uint64_t now, void *context) {
  reading read = {connection, now, context};
  return read_bytes(&read, &direction(connection, requests)->reader, requests, bytes, count);
}

/* See chttp2.h. */
ch2_status ch2_connection_read_vector(ch2_connection *connection, int requests, const struct iovec *vector,
                                      int vector_count, size_t skip, size_t count, uint64_t now, void *context) {
  reading read = {connection, now, context};
  ch2_reader *reader = &direction(connection, requests)->reader;
  for (int i = 0; i < vector_count && count > 0; i++) {
    size_t length = vector[i].iov_len < count ? vector[i].iov_len : count;
    count -= length;
    const uint8_t *bytes = vector[i].iov_base;
    if (!bytes) continue;
    if (skip >= length) {
      skip -= length;
      continue;
    }
    bytes += skip;
    length -= skip;
    skip = 0;
    /* A frame's header alone in its piece and its payload in the next: one frame, read at once. */
    if (length == 9 && i + 1 < vector_count && count > 0 && vector[i + 1].iov_base) {
      size_t next = vector[i + 1].iov_len < count ? vector[i + 1].iov_len : count;
      ch2_event event;
      size_t taken = ch2_read_split(reader, bytes, vector[i + 1].iov_base, next, &event);
      if (taken != SIZE_MAX) {
        ch2_status status = frame_ended(&read, &event, requests);
        if (status != CH2_OK) return status;
        i++;
        count -= next;
        bytes = (const uint8_t *)vector[i].iov_base + taken;
        length = next - taken;
      }
    }
    ch2_status status = read_bytes(&read, reader, requests, bytes, length);
    if (status != CH2_OK) return status;
  }
  return CH2_OK;
}

/* See chttp2.h. */
void ch2_connection_finish(ch2_connection *connection, uint64_t now, void *context) {
  reading read = {connection, now, context};
  end_streams(&read, 0, -1, &connection->recorded_at_finish);
  uint32_t count = __atomic_exchange_n(&connection->borrowed_count, 0, __ATOMIC_ACQ_REL);
  for (uint32_t i = 0; i < count; i++) connection->borrowed[i]->give_back(connection->borrowed[i]);
}
