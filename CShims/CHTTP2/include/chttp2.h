/*
 * chttp2.h — reading HTTP/2 (RFC 9113) from the bytes of a connection: for each direction, a frame
 * reader that works across any split of the bytes and an HPACK (RFC 7541) decoder that keeps the
 * direction's dynamic table in sync and decodes the few fields a monitor records; and for the
 * connection, its streams followed from both directions' frames, each handed to the monitor's
 * recorder once it ended.
 *
 * Everything is plain data, preallocated by the caller (the monitor keeps the readers in a pool of
 * pages that are touched only as they are used); nothing here allocates, locks, does I/O or
 * touches errno. All-zero bytes are NOT a valid reader: call ch2_reader_init (it writes the
 * scalars only, never the buffers, so an untouched buffer page stays untouched).
 *
 * Symbols are prefixed ch2_. A malformed input never crashes the reader: it stops with a status
 * (ch2_status_name) and reads nothing more.
 */
#ifndef CHTTP2_H
#define CHTTP2_H

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

/* ---- limits -------------------------------------------------------------------------------------- */

/* The largest HPACK dynamic table kept, in RFC 7541 §4.1 size (name + value + 32 per entry). The
 * protocol's default is 4096; a size update above this stops the direction (CH2_TABLE_TOO_LARGE). */
#define CH2_HPACK_TABLE_SIZE 16384u
#define CH2_HPACK_MAX_ENTRIES (CH2_HPACK_TABLE_SIZE / 32u)
/* The largest header block read: the fragments of a HEADERS or PUSH_PROMISE and its
 * CONTINUATIONs, padding and priority removed. Larger: CH2_BLOCK_TOO_LARGE. */
#define CH2_BLOCK_BYTES 65536u
/* The memo of Huffman strings an HPACK decoder keeps (see ch2_hpack_decoder): slots, and the
 * longest string kept, as sent and decoded (a slot is 128 bytes). */
#define CH2_HPACK_MEMO_SLOTS 32u
#define CH2_HPACK_MEMO_ENCODED 40u
#define CH2_HPACK_MEMO_DECODED 86u
/* The longest header block an HPACK decoder keeps to replay (see ch2_hpack_decoder), and how many
 * of its first fields it can replay alone, before a block that differs from it. */
#define CH2_HPACK_REPLAY_BYTES 256u
#define CH2_HPACK_REPLAY_PREFIXES 16u
/* The bytes of header blocks a decoder keeps instead of its table while the peer's encoder names
 * none of its entries (see ch2_hpack_decoder): a table of 4096's worth of entries even in Huffman
 * strings of the longest codes (30 bits a character), when the blocks are mostly the fields they
 * insert; a block the log cannot hold has the table rebuilt and kept again. */
#define CH2_HPACK_LOG_BYTES 16384u

/* Capacities of the decoded fields: longer values are cut there and marked truncated. */
#define CH2_METHOD_BYTES 16u
#define CH2_SCHEME_BYTES 16u
#define CH2_CONTENT_TYPE_BYTES 64u
#define CH2_AUTHORITY_BYTES 256u
#define CH2_PATH_BYTES 512u
#define CH2_GRPC_MESSAGE_BYTES 128u

/* ---- statuses ------------------------------------------------------------------------------------ */

typedef enum ch2_status {
  CH2_OK = 0,
  CH2_BAD_PREFACE,        /* the client connection preface was expected and something else came */
  CH2_BAD_FRAME,          /* a frame breaks RFC 9113 §4–6 in a way that loses the framing (a
                             CONTINUATION that does not follow its HEADERS, padding longer than the
                             payload, a SETTINGS length not a multiple of 6, stream 0 HEADERS…) */
  CH2_BLOCK_TOO_LARGE,    /* a header block over CH2_BLOCK_BYTES */
  CH2_HPACK_BAD_INDEX,    /* an index of 0, or past the static and dynamic tables */
  CH2_HPACK_BAD_INTEGER,  /* an integer that overflows 32 bits, or ends with the block */
  CH2_HPACK_BAD_STRING,   /* a string longer than what is left of the block */
  CH2_HPACK_BAD_HUFFMAN,  /* EOS inside a string, padding longer than 7 bits or not all ones */
  CH2_HPACK_BAD_SIZE_UPDATE, /* a size update after a field */
  CH2_TABLE_TOO_LARGE,    /* a size update above CH2_HPACK_TABLE_SIZE: valid, but not kept here */
} ch2_status;

/* A constant, human-readable name of a status ("bad HPACK index"…). */
const char *ch2_status_name(ch2_status status);

/* ---- HPACK --------------------------------------------------------------------------------------- */

/* What a header block says that a monitor records. Text is raw bytes (Huffman decoded, not
 * terminated, not percent-decoded), cut at its capacity; but for a :path sent as a Huffman string
 * not to be indexed (what curl, h2load, nghttp2 and most clients send: every request's path
 * differs), which is kept as its code (`path_huffman`), for the records' reader to decode
 * (ch2_huffman_decode_text): the code is never needed again on the connection, and decoding it
 * costs the hooks more than the rest of a request's block. The first occurrence of a field wins. */
typedef struct ch2_fields {
  uint16_t status;              /* :status as a number when it is 3 digits; 0 when absent */
  int16_t grpc_status;          /* grpc-status when it is 1–3 digits; -1 when absent */
  uint16_t authority_length;    /* :authority, or host when there is no :authority */
  uint16_t path_length;
  uint16_t grpc_message_length;
  uint8_t method_length;
  uint8_t scheme_length;
  uint8_t content_type_length;
  uint8_t method_truncated, authority_truncated, path_truncated, grpc_message_truncated,
      content_type_truncated;
  uint8_t path_huffman; /* `path` holds the :path's Huffman code, as sent (path_length bytes) */
  uint8_t method[CH2_METHOD_BYTES];
  uint8_t scheme[CH2_SCHEME_BYTES];
  uint8_t content_type[CH2_CONTENT_TYPE_BYTES];
  uint8_t authority[CH2_AUTHORITY_BYTES];
  uint8_t path[CH2_PATH_BYTES];
  uint8_t grpc_message[CH2_GRPC_MESSAGE_BYTES];
} ch2_fields;

/* Empties `fields` (scalars only: text past a length is never read). */
void ch2_fields_clear(ch2_fields *fields);

/* Decodes the HPACK Huffman code `code` (`length` bytes: a :path kept as its code) into `text`,
 * its first `capacity` bytes. Returns the decoded length (bytes past `capacity` are not written),
 * or SIZE_MAX when the code is not a valid one (RFC 7541 §5.2: EOS, or padding that is not the
 * most significant bits of EOS or longer than 7 bits). */
size_t ch2_huffman_decode_text(const uint8_t *code, size_t length, uint8_t *text, size_t capacity);

/* One direction's HPACK decoding state: its dynamic table, and what spares decoding again what
 * was decoded before: the last header block, replayed whole when it comes again and decoding it
 * again would do the same (nginx sends the same response block again and again, inserting
 * server, date, content-type, content-length and last-modified into the table each time), and
 * as far as a block that differs begins like it (a response of another length); and a memo of
 * the Huffman strings decoded lately (for the fields that differ). While the peer's encoder names
 * none of the table's entries (nginx's never does), the table is not kept: each block is only
 * read for its fields and logged, and the table rebuilt from the log when one names it.
 * Layout private to hpack.c. */
typedef struct ch2_hpack_decoder {
  uint32_t max_size;   /* the table's maximum size now (size updates; 4096 at first) */
  uint32_t size;       /* the entries' RFC 7541 size */
  uint32_t count;      /* entries in the table */
  uint32_t oldest;     /* slot of the oldest entry in `entries` (a ring of max_size / 32 slots) */
  uint32_t byte_head;  /* where the next entry's bytes go in `bytes` (a ring of max_size bytes) */
  uint32_t memo_valid; /* a bit per `memo` slot that holds a string (none at first) */
  uint32_t memo_recent; /* a bit per `memo` slot: used more recently than its set's other one */
  uint32_t prefix_fields_replayed; /* diagnostics: fields replayed in blocks that differ, since init */
  uint32_t blocks_logged;   /* diagnostics: blocks read without the table since init */
  uint32_t table_rebuilds;  /* diagnostics: times the table was rebuilt from the logged blocks */
  /* The table left unkept (see hpack.c): */
  uint8_t lazy;             /* not kept now: the blocks since that inserted are in `log` */
  uint8_t lazy_allowed;     /* 1 at init; 0 keeps the table always (tests' reference decoders) */
  uint8_t log_base_gone;    /* the logged blocks' entries alone fill the table: none before is left */
  uint16_t clean_blocks;    /* blocks in a row decoded with the table that named none of it */
  uint16_t clean_needed;    /* how many leave it unkept (doubles each time it is rebuilt) */
  uint8_t last_logged;      /* the last block read without the table is the newest logged */
  uint32_t log_start, log_end; /* the logged blocks in `log` (a record, then the block's bytes) */
  uint32_t log_newest;      /* where the newest logged block's record is */
  uint32_t log_least_size;  /* the least RFC 7541 size the logged blocks' entries take */
  uint32_t last_least_size; /* of the last block read without the table (replay_block) */
  struct ch2_hpack_memo {
    uint8_t encoded_length, decoded_length;
    uint8_t encoded[CH2_HPACK_MEMO_ENCODED];  /* a Huffman string as sent, without its length */
    uint8_t decoded[CH2_HPACK_MEMO_DECODED];  /* what it decoded to (it was valid) */
  } memo[CH2_HPACK_MEMO_SLOTS];
  uint32_t replay_length;   /* bytes of `replay_block`; 0: no block to replay */
  uint16_t replay_size;     /* the RFC 7541 size of the entries it inserted (at most half the table) */
  uint16_t replay_inserts;  /* entries that block inserted: the table's newest */
  uint8_t replay_whole;     /* whether the whole block replays, or only its prefixes */
  uint8_t replay_steady;    /* replaying it whole again leaves the table as it is (see hpack.c) */
  uint8_t replay_prefix_count; /* of `replay_prefixes` */
  uint8_t replay_names_table;  /* whether it named an entry of the table */
  uint32_t replay_run;      /* entries it and its replays since inserted, until replay_steady */
  struct ch2_hpack_prefix {
    uint16_t end;           /* where its first fields end in the block, */
    uint16_t inserts, size; /* the entries they inserted and their size, */
    uint16_t seen;          /* the recorded fields they said (a bit per field) */
  } replay_prefixes[CH2_HPACK_REPLAY_PREFIXES];
  ch2_fields fields;        /* what the last block decoded said (the kept block's, when it was kept) */
  uint8_t log[CH2_HPACK_LOG_BYTES];
  uint8_t replay_block[CH2_HPACK_REPLAY_BYTES];
  struct ch2_hpack_entry {
    uint16_t offset;        /* of its name in `bytes`, its value following (it may wrap at the end) */
    uint16_t name_length;
    uint16_t value_length;
    uint8_t field;          /* which recorded field its name is */
    uint8_t unused;
  } entries[CH2_HPACK_MAX_ENTRIES];
  uint8_t bytes[CH2_HPACK_TABLE_SIZE];
} ch2_hpack_decoder;

/* A fresh decoder: an empty table of maximum size 4096 and an empty memo (scalars only). */
void ch2_hpack_init(ch2_hpack_decoder *decoder);

/* Decodes one complete header block: updates the dynamic table exactly as the peer's encoder did
 * (every literal with incremental indexing inserted, size updates applied, whatever its name), and
 * writes the recorded fields into decoder->fields, where they stay until the next block (a block
 * replayed leaves them as they are). Returns CH2_OK, or why the block is malformed; after an error
 * the table is no longer in sync and the decoder must not be used again. */
ch2_status ch2_hpack_decode(ch2_hpack_decoder *decoder, const uint8_t *block, size_t length);

/* For tests and diagnostics: rebuilds the table if it is not kept now (see ch2_hpack_decoder), so
 * that ch2_hpack_entry_at and `size` say what it holds. Returns CH2_OK, or the error a logged block
 * gave (then the decoder must not be used again). */
ch2_status ch2_hpack_keep_table(ch2_hpack_decoder *decoder);

/* For tests and diagnostics: whether the memo holds the Huffman string `bytes` (`length` bytes, as
 * sent, without its length prefix). */
int ch2_hpack_memo_holds(const ch2_hpack_decoder *decoder, const uint8_t *bytes, size_t length);

/* For tests and diagnostics: copies the dynamic table's entry `index` (1 is the newest) — up to
 * the capacities — and sets its lengths. Returns 0 when there is no such entry. */
int ch2_hpack_entry_at(const ch2_hpack_decoder *decoder, uint32_t index, uint8_t *name,
                       size_t name_capacity, size_t *name_length, uint8_t *value,
                       size_t value_capacity, size_t *value_length);

/* ---- frames -------------------------------------------------------------------------------------- */

enum {
  CH2_DATA = 0x0, CH2_HEADERS = 0x1, CH2_PRIORITY = 0x2, CH2_RST_STREAM = 0x3, CH2_SETTINGS = 0x4,
  CH2_PUSH_PROMISE = 0x5, CH2_PING = 0x6, CH2_GOAWAY = 0x7, CH2_WINDOW_UPDATE = 0x8,
  CH2_CONTINUATION = 0x9,
};
enum { CH2_FLAG_END_STREAM = 0x1, CH2_FLAG_ACK = 0x1, CH2_FLAG_END_HEADERS = 0x4,
       CH2_FLAG_PADDED = 0x8, CH2_FLAG_PRIORITY = 0x20 };

/* The length of the client connection preface, "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n". */
#define CH2_PREFACE_LENGTH 24u
/* Whether `length` bytes at `bytes` are the start of the client preface (all of it, or the part
 * there is). */
int ch2_is_preface_prefix(const uint8_t *bytes, size_t length);

typedef enum ch2_event_kind {
  CH2_EVENT_NONE = 0,  /* every byte given was read and no frame ended */
  CH2_EVENT_FRAME,     /* a frame ended: see ch2_event */
  CH2_EVENT_ERROR,     /* the reader stopped (reader->status says why); it reads nothing more */
} ch2_event_kind;

/* What ended with a frame. Every frame gives one event, whatever its type or stream. */
typedef struct ch2_event {
  uint8_t kind;            /* ch2_event_kind */
  uint8_t type;            /* the frame's type (CH2_DATA…; unknown types too) */
  uint8_t flags;           /* its flags as sent */
  uint8_t end_stream;      /* DATA or HEADERS with END_STREAM; for the CONTINUATION that ends a
                              block, the END_STREAM of the HEADERS that began it */
  uint8_t has_block;       /* a header block ended here (END_HEADERS on a HEADERS, PUSH_PROMISE or
                              CONTINUATION): ch2_reader_block has it, block_length bytes, for
                              ch2_hpack_decode; valid until the next ch2_read, and only while the
                              bytes that call read are (a frame read whole is read in place) */
  uint8_t block_is_push;   /* that block is a PUSH_PROMISE's (a request for promised_stream_id) */
  uint32_t stream_id;      /* the frame's stream (31 bits); a CONTINUATION's is its HEADERS' */
  uint32_t frame_bytes;    /* 9 + the payload length */
  uint32_t promised_stream_id; /* PUSH_PROMISE */
  uint32_t error_code;     /* RST_STREAM, GOAWAY */
  uint32_t last_stream_id; /* GOAWAY */
  uint32_t header_table_size; /* SETTINGS (not ACK) that set SETTINGS_HEADER_TABLE_SIZE; else UINT32_MAX */
} ch2_event;

/* One direction's frame reader. Layout private to frames.c but for what its comments name. */
typedef struct ch2_reader {
  uint8_t status;          /* ch2_status: CH2_OK while reading */
  uint8_t expect_preface;  /* bytes of the client preface still to come are `24 - preface_seen` */
  uint8_t preface_seen;
  uint8_t header_seen;     /* bytes of the current frame's 9-byte header read so far */
  uint8_t header[9];
  uint8_t type, flags;
  uint8_t pad_length;      /* of the current HEADERS/PUSH_PROMISE frame */
  uint8_t prefix_length;   /* its bytes before the fragment: pad length, priority, promised id */
  uint8_t block_end_stream, block_is_push, block_open; /* a header block awaits its CONTINUATION */
  uint8_t control_seen;    /* bytes of `control` read (a SETTINGS entry, RST_STREAM, GOAWAY's head) */
  uint8_t control[8];
  uint32_t length;         /* the current frame's payload length */
  uint32_t payload_seen;   /* bytes of it read so far */
  uint32_t stream_id;
  uint32_t block_stream_id;
  uint32_t promised_stream_id;
  uint32_t header_table_size; /* of the SETTINGS frame being read */
  uint32_t block_length;   /* bytes of the last header block */
  uint64_t frames;         /* frames read */
  const uint8_t *block_at; /* the last header block: in `block`, or in the bytes read (a frame whole there) */
  uint8_t block[CH2_BLOCK_BYTES]; /* a header block's fragments, gathered */
} ch2_reader;

/* A fresh reader (scalars only). `expect_preface`: the direction a client sends starts with the
 * client connection preface (prior knowledge, after an Upgrade: h2c's 101, or over TLS with ALPN
 * h2); the other direction starts with frames. */
void ch2_reader_init(ch2_reader *reader, int expect_preface);

/* Reads up to `length` bytes, stopping right after the first byte that ends a frame (or an
 * error): returns the bytes read and fills `event`. Call it again with the rest until every byte
 * is read. The events of a byte sequence are the same whatever split it arrives in. */
size_t ch2_read(ch2_reader *reader, const uint8_t *bytes, size_t length, ch2_event *event);


/* Reads, when the reader is between frames, the frame whose 9-byte header is at `header` and whose
 * payload begins at `payload` (`available` bytes there) if it is whole there and of the frames
 * ch2_read reads at once (DATA, a HEADERS that is its whole block…): fills `event` and returns the
 * payload bytes read. SIZE_MAX, and nothing read, otherwise (ch2_read then reads the header).
 * For a writer that sends each frame's header and payload from two buffers (nginx's writev). */
size_t ch2_read_split(ch2_reader *reader, const uint8_t *header, const uint8_t *payload, size_t available,
                      ch2_event *event);

/* The header block of the event just read (has_block), `reader->block_length` bytes: valid while
 * the bytes given to the call that read it are. */
static inline const uint8_t *ch2_reader_block(const ch2_reader *reader) { return reader->block_at; }

/* ---- a connection's streams (streams.c) ----------------------------------------------------------
 * Both directions of one HTTP/2 connection and the streams under way, read from the frames each
 * direction carries: each stream becomes one record (the recorder's callback) when both of its
 * halves ended (END_STREAM each way), when it is reset (RST_STREAM), refused (GOAWAY), or when the
 * connection closes. Each direction is read by the thread that moves its bytes; a stream's `state`
 * is the one word both write, atomically: whichever half ends second records it. About 350 KB
 * (two 64 KB block buffers, two HPACK decoders, 128 stream slots), kept in a pool entry whose pages
 * are touched only as a connection uses them: never initialized whole (ch2_connection_start writes
 * the scalars and the stream map; a stream slot's fields are written when a stream takes it). */

#define CH2_STREAM_CAPACITY 128u
/* Bytes the recorder keeps of a stream's request head (its own layout; it checks that it fits). */
#define CH2_STREAM_HEAD_BYTES 824u

/* One stream's slot: its request half, written by the thread that reads the request direction, its
 * response half, by the one that reads the response direction (a pushed stream's request half is
 * its PUSH_PROMISE's, written by the response direction). 1,024 bytes, 16 cache lines when the
 * connection is 64-byte aligned (a pool entry is): what every stream writes lies in the first two,
 * its scalars in the first and the start of its head in the second. */
typedef struct ch2_stream {
  /* The stream's tag (ch2_stream_tag) and which halves ended: CH2_REQUEST_ENDED, CH2_RESPONSE_ENDED,
   * CH2_RESET. Changed only atomically. */
  uint64_t state;
  /* The request half. */
  uint64_t request_tag;    /* the tag of the stream the request half's fields are of */
  uint64_t start;          /* monotonic ns: when its request's HEADERS (or PUSH_PROMISE) was read */
  uint64_t request_bytes;  /* frame bytes of the stream in the request direction, headers included */
  /* The response half. */
  uint64_t response_tag;
  uint64_t first_byte;     /* monotonic ns: the first response HEADERS (0: none yet) */
  uint64_t response_bytes;
  uint32_t ordinal;        /* (request half) streams opened on the connection before this one */
  uint16_t status;         /* the final :status (a 1xx is kept only until a final one); 0: none */
  uint8_t has_head;        /* (request half) `head` holds the request's method, path and :authority */
  uint8_t response_complete; /* the response ended with END_STREAM */
  int16_t grpc_status;     /* grpc-status of the headers (trailers-only) or trailers; -1: none */
  uint8_t grpc_message_length;
  /* The request head as the recorder keeps it (take_request_head writes both): its target is the
   * :path's Huffman code when `head_target_huffman` (see ch2_fields). */
  uint8_t head_target_huffman;
  uint8_t is_grpc;         /* (request half) its content-type is application/grpc (+format, ;params) */
  uint8_t request_reset;   /* (request half) 1 + the error code of the RST_STREAM the client sent
                              (255 for any above 253); 0: none */
  uint8_t response_reset;  /* (response half) the same, the server's */
  _Alignas(8) uint8_t head[CH2_STREAM_HEAD_BYTES];
  uint8_t grpc_message[CH2_GRPC_MESSAGE_BYTES];
} ch2_stream;

enum { CH2_REQUEST_ENDED = 1, CH2_RESPONSE_ENDED = 2, CH2_RESET = 4 };

typedef struct ch2_direction {
  ch2_reader reader;
  ch2_hpack_decoder decoder; /* its `fields`: of the last header block it decoded */
} ch2_direction;

typedef struct ch2_stream_callbacks ch2_stream_callbacks;
typedef struct ch2_stream_table ch2_stream_table;

/* Stream slots and the map that says which open stream holds which: a connection's own, and the
 * ones it borrows while more streams are in flight than its own holds (ch2_stream_callbacks'
 * `more_slots`). */
struct ch2_stream_table {
  ch2_stream streams[CH2_STREAM_CAPACITY]; /* first: at the table's alignment */
  /* The stream slots no stream holds, the one freed last on top: a stack that either direction
   * pops and pushes without a lock (bits 0–7: the top slot, CH2_NO_SLOT when empty; above them a
   * count of the stack's changes, so that a pop that raced another pop and push fails). */
  uint64_t free_slots;
  uint32_t slots_never_used; /* slots at and past this index have held no stream of this connection */
  uint8_t next_free[CH2_STREAM_CAPACITY]; /* the free slot under each free slot on the stack */
  /* Which slot each open stream holds, at its place (ch2_stream_place): the stream id from bit
   * CH2_PLACE_ID_SHIFT, the slot in bits 0–7, CH2_PLACE_SPILLED (the connection's own table only);
   * 0 when the place holds none. Set and cleared only by compare-and-swap. */
  uint64_t stream_map[CH2_STREAM_CAPACITY];
  /* Gives a borrowed table back to whoever lent it (set by the lender; unused in a connection's own). */
  void (*give_back)(ch2_stream_table *table);
};

/* Tables a connection may borrow: with its own, 1,024 streams in flight at once. */
#define CH2_BORROWED_TABLES 7u

typedef struct ch2_connection {
  ch2_stream_table table; /* first: at the entry's alignment */
  const ch2_stream_callbacks *callbacks; /* what is done with its streams */
  uint32_t generation;     /* this connection's taking of its pool entry: in every tag of its streams */
  uint32_t streams_opened; /* by either side: a stream's ordinal */
  /* Streams recorded, by who recorded them (no counter has two writers). */
  uint32_t recorded_by_requests, recorded_by_responses, recorded_at_finish;
  /* Streams lost: opened while every place they could hold had an older stream still open, which
   * the new one took over (that one is not recorded). */
  uint32_t streams_lost;
  /* The tables borrowed (`borrowed_count` of them, published with release), and the lock either
   * direction holds while it opens a stream past its own table's place (ch2_stream_open): the
   * holding thread's pthread_self, 0 when free (a fork's child clears it: ch2_connection_forked). */
  ch2_stream_table *borrowed[CH2_BORROWED_TABLES];
  uint32_t borrowed_count;
  uint64_t spill_lock;
  ch2_direction requests;  /* the client's frames */
  ch2_direction responses; /* the server's */
} ch2_connection;

/* What the recorder does with a stream: take its request head from the fields of the header block
 * that opened it (a HEADERS, or a PUSH_PROMISE for a pushed stream), and record it once it ended
 * (`now`: when). `context` is the reader's (ch2_connection_read), passed through. */
struct ch2_stream_callbacks {
  void (*take_request_head)(void *context, ch2_connection *connection, ch2_stream *stream,
                            const ch2_fields *fields);
  void (*record)(void *context, ch2_connection *connection, ch2_stream *stream, uint32_t id, uint64_t now);
  /* Another table of stream slots, its bytes as its last user left them (its `give_back` set), for a
   * connection whose stream's place in every table it has holds an older stream still open; NULL
   * when none is left (then the new stream takes the older one's slot over). May itself be NULL. A
   * borrowed table is given back when the connection finishes. */
  ch2_stream_table *(*more_slots)(void);
};

/* Makes a pool entry fresh for a new connection: its scalars and both directions' readers and
 * tables (the stream slots' tags carry `generation`, so old slots are not this connection's), and
 * what is done with its streams (`callbacks`, which must outlive it). */
void ch2_connection_start(ch2_connection *connection, uint32_t generation, const ch2_stream_callbacks *callbacks);

/* Reads `count` bytes of the request direction (`requests`) or the response direction, frame by
 * frame, at `now`: every header block decoded (the tables must stay the encoders'), each stream's
 * halves followed, and the streams that end handed to the callbacks with `context`. Returns CH2_OK, or what stopped
 * the direction (a malformed frame or header block; it reads nothing more). */
ch2_status ch2_connection_read(ch2_connection *connection, int requests, const uint8_t *bytes, size_t count,
                               uint64_t now, void *context);

/* The same for the bytes a vector of `vector_count` pieces carries (readv, writev, recvmsg,
 * sendmsg): its first `count` bytes but the first `skip` of them (an HTTP/1.1 tunnel's bytes
 * before it begins); pieces without a base are passed over. A piece that is a frame's 9-byte
 * header followed by a piece with its payload is read as one frame (ch2_read_split). */
ch2_status ch2_connection_read_vector(ch2_connection *connection, int requests, const struct iovec *vector,
                                      int vector_count, size_t skip, size_t count, uint64_t now, void *context);

/* The connection closed at `now`: its streams still open are recorded, as not complete, and the
 * tables it borrowed given back. */
void ch2_connection_finish(ch2_connection *connection, uint64_t now, void *context);

/* In a fork's child, whose only thread is the one that forked: a lock another thread of the parent
 * held is free. */
static inline void ch2_connection_forked(ch2_connection *connection) { connection->spill_lock = 0; }

/* Streams recorded on the connection. */
static inline uint64_t ch2_connection_recorded(const ch2_connection *connection) {
  return (uint64_t)connection->recorded_by_requests + connection->recorded_by_responses +
         connection->recorded_at_finish;
}

/* Streams opened on the connection that ended: recorded, or lost (the record's http_exchanges). */
static inline uint64_t ch2_connection_streams(const ch2_connection *connection) {
  return ch2_connection_recorded(connection) + __atomic_load_n(&connection->streams_lost, __ATOMIC_RELAXED);
}

#define CH2_NO_SLOT 0xFFu
/* A place of the connection's own table whose stream opened in a borrowed table once, because the
 * place held an older stream still open: a stream to open at the place looks in the borrowed tables
 * first (ch2_stream_open), and one not found at it may be in them. */
#define CH2_PLACE_SPILLED 0x100u
#define CH2_PLACE_ID_SHIFT 9

/* The place of stream `id` in a stream map: client-initiated (odd) streams in order, server-
 * initiated (even) ones half the map away, so that a pushed stream meets the stream that promised
 * it rarely. */
static inline uint32_t ch2_stream_place(uint32_t id) {
  return ((id >> 1) + ((id & 1) == 0 ? 64u : 0u)) & (CH2_STREAM_CAPACITY - 1);
}

/* The slot stream `id` holds in a borrowed table, or NULL (out of line: see ch2_stream_find). */
ch2_stream *ch2_stream_find_borrowed(ch2_connection *connection, uint32_t id);

/* The slot stream `id` holds, or NULL when it holds none (never opened, or recorded). */
static inline ch2_stream *ch2_stream_find(ch2_connection *connection, uint32_t id) {
  uint64_t entry = __atomic_load_n(&connection->table.stream_map[ch2_stream_place(id)], __ATOMIC_ACQUIRE);
  if (entry >> CH2_PLACE_ID_SHIFT == id)
    return (entry & 0xFF) != CH2_NO_SLOT ? &connection->table.streams[entry & 0xFF] : NULL;
  return entry & CH2_PLACE_SPILLED ? ch2_stream_find_borrowed(connection, id) : NULL;
}

/* The slot stream `id` holds, given it one if it holds none: the slot freed last (its lines the
 * likeliest to be in the cache), so a connection's streams keep to as many slots as they have in
 * flight. A stream whose place holds an older stream still open opens in a borrowed table (under
 * `spill_lock`: rare, and only the two directions' threads meet there); past
 * CH2_BORROWED_TABLES, or with none to borrow, it takes the older stream's slot over, and that one
 * is lost (`streams_lost`). NULL when the stream was recorded already or its place holds a newer
 * stream of the same side, and when no slot is free (every one held, another thread claiming at
 * once). Its halves are made fresh by the claims (its tag is not the slot's yet). */
ch2_stream *ch2_stream_open(ch2_connection *connection, uint32_t id);

/* Stream `id`, recorded, gives its slot back (unless a newer stream took it over). */
void ch2_stream_release(ch2_connection *connection, uint32_t id);

/* The tag of stream `id` on this connection (a stream's state without its bits). */
static inline uint64_t ch2_stream_tag(const ch2_connection *connection, uint32_t id) {
  return (uint64_t)(connection->generation & 0x3FFFFFFFu) << 34 | (uint64_t)(id & 0x7FFFFFFFu) << 3;
}

/* The request half of `stream` is stream `tag`'s: made fresh if it was another's. 0 when the
 * stream was recorded already (a frame after its end). */
int ch2_stream_claim_request_half(ch2_stream *stream, uint64_t tag);

/* Ends `halves` (CH2_REQUEST_ENDED, CH2_RESPONSE_ENDED, with CH2_RESET to end both at once) of
 * stream `tag`. 1 when this call ended the last half that was open: the caller records the stream.
 * A slot still tagged with an older stream is taken over. */
int ch2_stream_end(ch2_stream *stream, uint64_t halves, uint64_t tag);

/* A view of `stream->head` for the recorder. (Swift does not import a byte array this large as
 * anything it can point into.) */
static inline void *ch2_stream_head(ch2_stream *stream) { return stream->head; }

/* The status a gRPC call that ended without a grpc-status ended with, by gRPC's own rules: a
 * RST_STREAM's code (PROTOCOL-HTTP2.md: CANCEL → CANCELLED, REFUSED_STREAM → UNAVAILABLE,
 * ENHANCE_YOUR_CALM → RESOURCE_EXHAUSTED, INADEQUATE_SECURITY → PERMISSION_DENIED, any other →
 * INTERNAL), else an HTTP status but 200 (http-grpc-status-mapping.md), else UNKNOWN for a response
 * that ended without one and UNAVAILABLE for a call the connection's end (or a GOAWAY) cut short. */
int16_t ch2_grpc_status_of_end(const ch2_stream *stream, int has_response);

/* The record's grpc_status of a stream whose halves are (`has_request`, `has_response`) the
 * stream's: its trailers' (or a trailers-only response's) grpc-status; for a gRPC call without
 * one, ch2_grpc_status_of_end's; -1 for a stream that is no gRPC call. */
static inline int16_t ch2_stream_grpc_status(const ch2_stream *stream, int has_request, int has_response) {
  if (has_response && stream->grpc_status >= 0) return stream->grpc_status;
  return has_request && stream->is_grpc ? ch2_grpc_status_of_end(stream, has_response) : -1;
}

#endif
