/*
 * cnm_record_layout.h — the connection and http records as C sees them: the layout of Swift's
 * RawRecord (Sources/NetMonitor/Recorder/RawRecord.swift), its ConnectionCore and its request's
 * HTTPHead, field for field, for the injected library, which records a plaintext client's
 * connections and simple exchanges without the monitor (CShims/CElfHookPreload/clients.c). Swift
 * lays a struct out in declaration order, each field at its alignment, as C does; RecordLayoutTests
 * compares every offset here with Swift's, so a field changed on one side and not the other fails
 * there. (A change of a stored field bumps CNM_RECORD_LAYOUT_VERSION, cnm_records.h.)
 */
#ifndef CNM_RECORD_LAYOUT_H
#define CNM_RECORD_LAYOUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cnm_records.h"

/* FixedText<capacity>: its bytes, then its count (an Int). */
#define CNM_FIXED_TEXT(capacity) \
  struct {                       \
    uint8_t bytes[capacity];     \
    int64_t count;               \
  }

/* ConnectionCore: what the hooks know of a connection. */
typedef struct cnm_connection_core {
  CNM_FIXED_TEXT(128) host;
  uint64_t dns_ns;
  uint64_t start_unix_ns;
  uint64_t start_ns;
  uint64_t connect_start;
  uint64_t connect_end;
  uint64_t tls_start;
  uint64_t tls_end;
  uint64_t bytes_sent;
  uint64_t bytes_received;
  uint64_t tls_bytes_sent;
  uint64_t tls_bytes_received;
  uint64_t http_exchanges;
  uint8_t error_call; /* HookedCall: 1 is connect */
  uint8_t http_stop;
  int32_t error_code;
  CNM_FIXED_TEXT(16) tls_alpn;
  /* The identity: what an http record on a connection that served one before copies. */
  uint64_t id;
  int32_t fd;
  uint8_t role;      /* CNM_ROLE_… */
  uint8_t transport; /* CNM_TRANSPORT_… */
  uint8_t phase;     /* CNM_PHASE_… */
  uint8_t is_tls;
  uint8_t has_dns;
  cnm_address peer;
  CNM_FIXED_TEXT(16) tls_version;
} cnm_connection_core;

enum { CNM_ROLE_CLIENT = 1, CNM_ROLE_SERVER = 2 };
enum { CNM_TRANSPORT_TCP = 1, CNM_TRANSPORT_UDP = 2 };
enum { CNM_PHASE_CONNECTING = 1, CNM_PHASE_ESTABLISHED = 2, CNM_PHASE_FAILED = 3 };
enum { CNM_ERROR_CALL_CONNECT = 1 };

/* HTTPHead: a request's or response's head, its text packed (method, target, Host). Swift's size
 * is CNM_HTTP_HEAD_SIZE, without C's tail padding: what follows it in a record starts there. */
#define CNM_HEAD_TEXT_CAPACITY 784
typedef struct cnm_http_head {
  uint64_t content_length_value;
  uint16_t status;
  uint16_t target_length;
  uint16_t host_length;
  uint8_t method_length;
  uint8_t minor_version;
  bool target_truncated;
  bool host_truncated;
  bool has_content_length;
  bool has_transfer_encoding;
  bool is_chunked;
  bool connection_close;
  bool connection_keep_alive;
  bool connection_upgrade;
  uint8_t body_framing;          /* HTTPBodyFraming's case: CNM_BODY_… */
  uint8_t answered_request_kind; /* HTTPRequestKind: 0 ordinary */
  uint8_t text[CNM_HEAD_TEXT_CAPACITY];
} cnm_http_head;
#define CNM_HTTP_HEAD_SIZE (offsetof(cnm_http_head, text) + CNM_HEAD_TEXT_CAPACITY)
enum { CNM_BODY_NONE = 0, CNM_BODY_CONTENT_LENGTH = 1, CNM_BODY_CHUNKED = 2 }; /* HTTPBodyFraming's first cases */

/* RawRecord: a connection or http record, as a queue or ring slot holds it. */
typedef struct cnm_raw_record {
  uint8_t kind; /* CNM_RECORD_CONNECTION, CNM_RECORD_HTTP */
  int32_t pid;
  uint64_t start_unix_ns;
  uint64_t duration_ns;
  uint16_t http_status;
  bool http_reused;
  bool http_response_cut_short;
  uint8_t http_protocol; /* CNM_HTTP_… */
  int16_t grpc_status;   /* -1: none */
  uint64_t http_first_byte_ns; /* + 1: 0 means no response byte */
  uint64_t http_request_bytes;
  uint64_t http_response_bytes;
  cnm_connection_core core;
  _Alignas(8) uint8_t http_request[CNM_HTTP_HEAD_SIZE]; /* a cnm_http_head */
  uint32_t stream_id;
  bool target_is_huffman_code;
  CNM_FIXED_TEXT(128) grpc_message;
} cnm_raw_record;

enum { CNM_HTTP_UNKNOWN = 0, CNM_HTTP_10 = 1, CNM_HTTP_11 = 2, CNM_HTTP_2 = 3 };

_Static_assert(sizeof(cnm_raw_record) == CNM_RECORD_SLOT_SIZE, "a record fills its slot");

#endif
