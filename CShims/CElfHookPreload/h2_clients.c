/* HTTP/2 clients, recorded by the injected library too (elfhook_preload.h): over the TLS sessions
 * tls_clients.c records, when ALPN chose h2 (a `curl https://…` to most public servers), and in
 * cleartext with prior knowledge (`curl --http2-prior-knowledge`, an h2c gRPC client).
 *
 * The frames are read by the monitor's own C reader (CHTTP2's ch2_connection: frame reader, HPACK
 * decoders, the streams under way), in an entry of this library's copy of the monitor's pool
 * (h2_pool.c, mapped at the first such connection); what is Swift in the monitor, a stream's
 * request head and its record (H2Streams.swift), is written here, field for field
 * (LightClientTests compares them). Each direction is decided by its first bytes, by the
 * monitor's rules (H2Traffic.swift): the requests are HTTP/2 when the client's first begin with
 * the connection preface (`PRI `), the responses when the server's first are a SETTINGS frame.
 * Anything else (plaintext the server sends before the client's preface, a first request that is
 * not HTTP/2 over h2, a server's first bytes that are not its preface) loads the monitor, which
 * decides from the bytes as it always does. When the monitor takes the connections over, it takes
 * the reader too, where it is (cnm_client_h2, ClientAdoption.swift): the streams under way are its
 * from then on, and a response direction not decided yet is its to decide.
 *
 * Nothing here allocates on a call's way (the pool's mapping is reserved once, at the first
 * HTTP/2 connection), locks, or touches errno but through the pool's mmap, whose errno its callers
 * (clients.c, tls_clients.c) restore. */
#include "client_entry.h"
#include "elfhook_preload.h"

#include "chttp2.h"
#include "cnm_host_header_name.h"

#include <string.h>

enum { METHOD_CAPACITY = 16, TARGET_CAPACITY = 512, HOST_CAPACITY = 256 }; /* HTTPHead's */
_Static_assert(METHOD_CAPACITY + TARGET_CAPACITY + HOST_CAPACITY == CNM_HEAD_TEXT_CAPACITY, "HTTPHead's text");
_Static_assert(CNM_HTTP_HEAD_SIZE <= CH2_STREAM_HEAD_BYTES, "a request head fits a stream's slot");

/* Appends `length` bytes of `bytes` to a head's text at `at`, as many as `room` holds: how many. */
static size_t append(cnm_http_head *head, size_t at, const uint8_t *bytes, size_t length, size_t room) {
  size_t copied = length < room ? length : room;
  memcpy(head->text + at, bytes, copied);
  return copied;
}

/* Whether the Huffman code `code` decodes to text that begins with `/` (its first six bits,
 * 011000: RFC 7541 Appendix B's canonical code). */
static bool code_begins_with_slash(const uint8_t *code, size_t length) { return length && code[0] >> 2 == 0x18; }

/* The request's method, path as the target (:authority for CONNECT), :authority as the host; the
 * connection's first request may name its server (H2Streams.takeRequestHead). */
static void take_request_head(void *context, ch2_connection *h2, ch2_stream *stream, const ch2_fields *fields) {
  (void)h2;
  elfhook_client *connection = context;
  cnm_http_head *head = ch2_stream_head(stream);
  memset(head, 0, offsetof(cnm_http_head, text));
  head->method_length = (uint8_t)append(head, 0, fields->method, fields->method_length, METHOD_CAPACITY);
  bool has_path = fields->path_length != 0;
  const uint8_t *target = has_path ? fields->path : fields->authority;
  size_t target_length = has_path ? fields->path_length : fields->authority_length;
  head->target_length = (uint16_t)append(head, head->method_length, target, target_length, TARGET_CAPACITY);
  head->target_truncated = head->target_length < target_length || fields->path_truncated;
  head->host_length = (uint16_t)append(head, head->method_length + head->target_length, fields->authority,
                                       fields->authority_length, HOST_CAPACITY);
  head->host_truncated = head->host_length < fields->authority_length || fields->authority_truncated;
  bool huffman = fields->path_huffman && has_path;
  stream->head_target_huffman = huffman;
  stream->has_head = 1;
  cnm_connection_core *core = &connection->core;
  if (stream->ordinal != 0 || core->host.count != 0) return;
  const uint8_t *text = head->text + head->method_length;
  bool target_is_path = huffman ? code_begins_with_slash(fields->path, fields->path_length)
                                : head->target_length && text[0] == '/';
  const uint8_t *host = text + head->target_length;
  size_t length = cnm_host_header_name_length(host, head->host_length, target_is_path, core->peer.port,
                                              connection->head.is_tls);
  if (length) ELFHOOK_SET_TEXT(core->host, host, length);
}

/* Stream `id`, both halves ended (or reset, or the connection closing), becomes an http record
 * (H2Streams.record). */
static void record_stream(void *context, ch2_connection *h2, ch2_stream *stream, uint32_t id, uint64_t now) {
  elfhook_client *connection = context;
  cnm_queue *queue = cnm_record_queue();
  if (!queue) return;
  uint64_t ticket;
  cnm_raw_record *record = cnm_queue_reserve(queue, &ticket);
  if (!record) {
    cnm_queue_count_drop(queue);
    return;
  }
  uint64_t tag = ch2_stream_tag(h2, id);
  bool has_request = stream->request_tag == tag, has_response = stream->response_tag == tag;
  uint64_t first_byte = has_response ? stream->first_byte : 0;
  uint64_t response_start = first_byte ? first_byte : now;
  uint64_t start = has_request && stream->start && stream->start < response_start ? stream->start : response_start;
  bool reused = has_request ? stream->ordinal > 0 : id > 1;
  const cnm_connection_core *core = &connection->core;
  record->kind = CNM_RECORD_HTTP;
  record->pid = cnm_current_pid();
  record->start_unix_ns = core->start_unix_ns + (start - core->start_ns);
  record->duration_ns = now - start;
  size_t copy_start = reused ? offsetof(cnm_connection_core, id) : offsetof(cnm_connection_core, dns_ns);
  memcpy((unsigned char *)&record->core + copy_start, (const unsigned char *)core + copy_start,
         sizeof *core - copy_start);
  cnm_http_head *request = (cnm_http_head *)record->http_request;
  if (has_request && stream->has_head) {
    const cnm_http_head *kept = ch2_stream_head(stream);
    memcpy(request, kept,
           offsetof(cnm_http_head, text) + kept->method_length + kept->target_length + kept->host_length);
    record->target_is_huffman_code = stream->head_target_huffman;
  } else {
    memset(request, 0, offsetof(cnm_http_head, text));
    record->target_is_huffman_code = false;
  }
  record->http_status = has_response ? stream->status : 0;
  record->http_response_cut_short = !(has_response && stream->response_complete);
  record->http_first_byte_ns = first_byte ? first_byte - start + 1 : 0;
  record->http_request_bytes = has_request ? stream->request_bytes : 0;
  record->http_response_bytes = has_response ? stream->response_bytes : 0;
  record->http_reused = reused;
  record->http_protocol = CNM_HTTP_2;
  record->stream_id = id;
  record->grpc_status = ch2_stream_grpc_status(stream, has_request, has_response);
  if (has_response && stream->grpc_status >= 0)
    ELFHOOK_SET_TEXT(record->grpc_message, stream->grpc_message, stream->grpc_message_length);
  cnm_queue_publish(queue, ticket);
}

static const ch2_stream_callbacks callbacks = {take_request_head, record_stream, cnm_h2_more_stream_slots};

/* The connection's HTTP/2 state, taken from the pool and made fresh; false when there is none
 * (the pool could not be mapped, or every entry is taken): the monitor reads the connection. */
static bool begin(elfhook_client *connection) {
  uint32_t generation;
  void *entry = cnm_h2_pool_set_up(sizeof(ch2_connection)) ? cnm_h2_pool_take(&generation) : NULL;
  if (!entry) return false;
  ch2_connection_start(entry, generation, &callbacks);
  connection->h2.connection = entry;
  return true;
}

/* Whether the first bytes a server sent (`count` at `bytes`) are its preface: a SETTINGS frame on
 * stream 0, no flags, its length a multiple of 6 and below 2^16 (H2Traffic.decide's rule). */
static bool is_server_preface(const uint8_t *bytes, size_t count) {
  if (count < 9) return false;
  uint32_t length = (uint32_t)bytes[1] << 8 | bytes[2];
  return bytes[0] == 0 && bytes[3] == CH2_SETTINGS && (bytes[4] | bytes[5] | bytes[6] | bytes[7] | bytes[8]) == 0 &&
         length % 6 == 0;
}

/* Whether the connection's bytes (`count` of them, in `buffer` or `vector`) are HTTP/2 it reads:
 * its state begun at the client's preface, its responses at the server's, each the first bytes of
 * its direction (`first`: none moved that way before). */
static bool decided(elfhook_client *connection, bool received, bool first_bytes, const void *buffer,
                    const struct iovec *vector, int vector_count, size_t count) {
  if (connection->head.inherited) return false; /* a fork child's copy: the monitor's */
  if (!received && connection->h2.connection) return true;
  if (received && connection->h2.responses_seen) return true;
  if (!first_bytes) return false;
  const uint8_t *first = buffer;
  size_t available = count;
  if (!first && vector_count > 0) {
    first = vector[0].iov_base;
    available = vector[0].iov_len < count ? vector[0].iov_len : count;
  }
  if (!first) return false;
  if (received) {
    if (!connection->h2.connection || !is_server_preface(first, available)) return false;
    connection->h2.responses_seen = 1;
    return true;
  }
  static const char preface[] = "PRI ";
  return available >= 4 && memcmp(first, preface, 4) == 0 && begin(connection);
}

/* Reads a decided direction's bytes; a direction that stops is only counted from then on. */
static void read_direction(elfhook_client *connection, bool received, const void *buffer, const struct iovec *vector,
                           int vector_count, size_t count) {
  bool requests = !received;
  uint8_t *stopped = requests ? &connection->h2.requests_stopped : &connection->h2.responses_stopped;
  if (*stopped) return;
  ch2_connection *h2 = connection->h2.connection;
  uint64_t now = cnm_monotonic_ns();
  ch2_status status =
      buffer ? ch2_connection_read(h2, requests, buffer, count, now, connection)
             : ch2_connection_read_vector(h2, requests, vector, vector_count, 0, count, now, connection);
  if (status != CH2_OK) { /* what the monitor does (H2Traffic.stop) */
    *stopped = 1;
    if (!connection->core.http_stop) connection->core.http_stop = (uint8_t)status;
  }
}

bool elfhook_h2_client_plaintext(elfhook_client *connection, bool received, const void *buffer, size_t count) {
  uint64_t moved = __atomic_load_n(received ? &connection->core.tls_bytes_received : &connection->core.tls_bytes_sent,
                                   __ATOMIC_RELAXED);
  if (!buffer || !decided(connection, received, moved == 0, buffer, NULL, 0, count)) return false;
  read_direction(connection, received, buffer, NULL, 0, count);
  return true;
}

bool elfhook_h2_client_socket_bytes(elfhook_client *connection, bool received, const void *buffer,
                                    const struct iovec *vector, int vector_count, size_t count) {
  if (connection->head.is_tls) return false;
  uint64_t moved = __atomic_load_n(received ? &connection->head.bytes_received : &connection->head.bytes_sent,
                                   __ATOMIC_RELAXED);
  if (!decided(connection, received, moved == 0, buffer, vector, vector_count, count)) return false;
  cnm_count_bytes(&connection->head, received, count);
  read_direction(connection, received, buffer, vector, vector_count, count);
  return true;
}

uint64_t elfhook_h2_client_finish(elfhook_client *connection) {
  ch2_connection *h2 = connection->h2.connection;
  if (!h2) return 0;
  ch2_connection_finish(h2, cnm_monotonic_ns(), connection);
  uint64_t streams = ch2_connection_streams(h2);
  connection->h2.connection = NULL;
  cnm_h2_pool_give_back(h2);
  return streams;
}
