/*
 * cnetmonitor.h — what NetMonitor's hot path needs from C: relaxed atomics on plain fields of
 * preallocated memory, a thread-local "inside the monitor" guard (Swift cannot declare __thread
 * variables), and a bounded multi-producer queue of fixed-size records.
 * Every function here is static inline or tiny, so the hooks stay free of calls they do not need.
 */
#ifndef CNETMONITOR_H
#define CNETMONITOR_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <unistd.h>

#include "cnm_chunked_body.h"
#include "cnm_http_scan.h"
#include "cnm_simple_heads.h"

/* ---- atomics on plain fields (the connection table lives in mmap'ed memory) ------------------ */

static inline void cnm_add_u64(uint64_t *field, uint64_t value) {
  __atomic_fetch_add(field, value, __ATOMIC_RELAXED);
}
static inline uint64_t cnm_load_u64(const uint64_t *field) { return __atomic_load_n(field, __ATOMIC_ACQUIRE); }
/* The two halves of an HTTP exchange (HTTPExchanges.swift) may end on two threads. */
static inline uint32_t cnm_load_u32(const uint32_t *field) { return __atomic_load_n(field, __ATOMIC_ACQUIRE); }
static inline void cnm_store_u32(uint32_t *field, uint32_t value) { __atomic_store_n(field, value, __ATOMIC_RELEASE); }
/* Sets *field to `value` if it holds *expected; otherwise loads it into *expected. */
static inline bool cnm_exchange_u32(uint32_t *field, uint32_t *expected, uint32_t value) {
  return __atomic_compare_exchange_n(field, expected, value, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
}
/* The same on 64-bit words: the state of an HTTP/2 stream (H2Streams.swift) and the link from a
 * connection to its HTTP/2 state. */
static inline void cnm_store_u64(uint64_t *field, uint64_t value) { __atomic_store_n(field, value, __ATOMIC_RELEASE); }
static inline bool cnm_exchange_u64(uint64_t *field, uint64_t *expected, uint64_t value) {
  return __atomic_compare_exchange_n(field, expected, value, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
}
static inline uint32_t cnm_increment_u32(uint32_t *field) { return __atomic_fetch_add(field, 1, __ATOMIC_RELAXED); }
/* Sets *field to `value` if it is 0; returns true when this call set it (first byte, first call). */
static inline bool cnm_set_once_u64(uint64_t *field, uint64_t value) {
  uint64_t expected = 0;
  return __atomic_compare_exchange_n(field, &expected, value, false, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED);
}

/* ---- the guard: code of the monitor itself (its recorder thread, its sinks) is never recorded -- */

extern __thread int cnm_guard_depth __attribute__((tls_model("initial-exec")));
static inline bool cnm_guard_active(void) { return cnm_guard_depth != 0; }
static inline void cnm_guard_enter(void) { cnm_guard_depth++; }
static inline void cnm_guard_leave(void) { cnm_guard_depth--; }

/* ---- errno, read and restored around the monitor's own work ---------------------------------- */

static inline int cnm_errno(void) { return errno; }
static inline void cnm_set_errno(int value) { errno = value; }

/* ---- a bounded MPSC queue of fixed-size slots (Vyukov's sequence-numbered ring) ----------------
 * The queue lives entirely in the memory it is formatted into, with offsets instead of pointers,
 * so the same queue works in anonymous memory (a recorder thread consumes it) and in a shared
 * file mapping (a record ring: another process consumes it, and a record published just before
 * the producer is killed is still there). */

typedef struct cnm_queue cnm_queue;

/* Bytes a queue of `capacity` (a power of two) slots of `slot_size` bytes occupies. */
size_t cnm_queue_footprint(size_t capacity, size_t slot_size);
/* Formats an empty queue in `memory` (cnm_queue_footprint bytes, 64-byte aligned, zeroed: a new
 * file or anonymous mapping). Writes only its first cnm_queue_header_size() bytes. */
cnm_queue *cnm_queue_format(void *memory, size_t capacity, size_t slot_size);
/* A queue in anonymous memory; NULL when out of memory or capacity is not a power of two. */
cnm_queue *cnm_queue_create(size_t capacity, size_t slot_size);
/* Whether `memory` (`size` bytes, from another process) holds a queue of `slot_size` slots whose
 * offsets stay inside it: checked before a consumer trusts a ring file. */
bool cnm_queue_is_valid(const void *memory, size_t size, size_t slot_size);
/* Reserves a slot for a producer; NULL when the queue is full (the caller counts a drop). Never
 * blocks, never allocates: safe in any hook and in signal handlers. */
void *cnm_queue_reserve(cnm_queue *queue, uint64_t *ticket);
/* Publishes a reserved slot. */
void cnm_queue_publish(cnm_queue *queue, uint64_t ticket);
/* The oldest published slot, or NULL when there is none yet; the consumer copies it out and
 * then calls cnm_queue_release. Single consumer. */
void *cnm_queue_peek(cnm_queue *queue);
void cnm_queue_release(cnm_queue *queue);
/* Whether a slot was reserved but is not published yet: a producer is writing it, or was killed
 * while writing it. Only a consumer that knows every producer is gone may skip it. */
bool cnm_queue_has_unpublished(const cnm_queue *queue);
/* Frees the oldest slot, published or not. Only once no producer can write to the queue. */
void cnm_queue_skip(cnm_queue *queue);
/* For a reader that leaves the records in place: the consumer's position, the producers' next
 * position, and the slot at `position` when it is published (NULL otherwise). */
uint64_t cnm_queue_read_position(const cnm_queue *queue);
uint64_t cnm_queue_write_position(const cnm_queue *queue);
void *cnm_queue_published_slot(cnm_queue *queue, uint64_t position);
/* Prefetches, for writing, the lines at `offsets` (`count` of them) of the slot the next
 * reservation would get, and its sequence number: a hint, harmless when another producer takes
 * that slot first. */
void cnm_queue_prefetch_next(const cnm_queue *queue, const uint16_t *offsets, uint32_t count);
/* Slots dropped because the queue was full. */
uint64_t cnm_queue_dropped(const cnm_queue *queue);
void cnm_queue_count_drop(cnm_queue *queue);
uint64_t cnm_queue_capacity(const cnm_queue *queue);
/* A queue in a file mapping takes the memory of its slots as it fills. This gives the first
 * `usable` slots theirs (their sequence numbers and the slots: cnm_populate) and makes only those
 * usable; the first reservation half a stage before their end makes more usable, on the calling
 * thread: four times as many, at most 256 more (~0.2 ms), at most all. A producer that reaches a
 * slot past them meanwhile populates that slot's pages itself. Call before producers start.
 * Returns 0, or the errno of cnm_populate (the queue then stays all usable, as formatted). */
int cnm_queue_make_usable(cnm_queue *queue, uint64_t usable);
/* Bytes of the queue's own fields, before its sequence numbers: what cnm_queue_format writes. */
size_t cnm_queue_header_size(void);
/* 0, or why the queue could not take more memory (an errno: ENOSPC for a full file system); from
 * then on the records past its usable slots are dropped and counted. */
int cnm_queue_growth_error(const cnm_queue *queue);
/* Makes [start, end) of a shared file mapping writable without a fault: its pages get their
 * memory (tmpfs) or blocks (a disk) now. Where a write would raise SIGBUS (a full file system),
 * MADV_POPULATE_WRITE fails, said as ENOSPC; EINVAL on kernels before 5.14. Returns 0 or the
 * errno. */
int cnm_populate(void *start, void *end);

/* ---- the record ring: a queue in a shared file mapping ------------------------------------------
 * One file per process image: a header (what wrote it) and, at CNM_RING_QUEUE_OFFSET, a queue of
 * records. The injected process produces; `elfhook` consumes and turns the records into JSON
 * Lines. A slot's memory is reserved before any producer may take it, so a full disk is an error
 * (at creation, or records dropped and counted later), never a SIGBUS in the host. */

#define CNM_RING_MAGIC "ELFHOOK\x01"
#define CNM_RING_VERSION 3
#define CNM_RING_QUEUE_OFFSET 4096

typedef struct cnm_ring_header {
  char magic[8];
  uint32_t version;
  uint32_t queue_offset;
  /* The record type's layout: its size in the low 32 bits, its layout version in the high 32. A
   * reader built with another layout refuses the file instead of misreading it. */
  uint64_t record_layout;
  uint64_t file_size;
  uint64_t created_unix_ns;
  int32_t pid;
  char process[20]; /* /proc/self/comm, NUL-terminated */
} cnm_ring_header;

/* Creates a ring for this process from `pattern` ("%p" becomes the pid; when a file exists there,
 * ".1", ".2"… is appended: an existing file is never opened, truncated or followed; a directory or
 * a device there is an error, EISDIR or EEXIST), mode 0600.
 * Writes the path to `path`. Returns the queue, or NULL with errno set. The memory of the first
 * `usable_records` records is reserved now, with the two headers' (all of it when
 * `usable_records` >= capacity, or on a kernel before 5.14), and the queue takes more as it fills
 * (cnm_queue_make_usable): the 5 MB of a ring of 4,096 records take ~2.5 ms of page faults, which
 * a process that records a few need not pay. */
cnm_queue *cnm_ring_create(const char *pattern, size_t capacity, size_t record_size, uint64_t record_layout,
                           size_t usable_records, char *path, size_t path_size);
/* Records a ring starts with: with the headers, five pages (~20 KB) that a process's first record
 * pays for; `curl --version` records one. The stages that follow have 32, 128, 384… */
#define CNM_RING_FIRST_RECORDS 8

/* `pattern` with "%p" as `pid` and "%%" as "%", in `out`; false when it does not fit. */
bool cnm_expand_pattern(const char *pattern, int pid, char *out, size_t size);

/* The process's short name (/proc/self/comm, at most 15 bytes), NUL-terminated in `name`; empty
 * when it cannot be read. What records and ring headers carry. */
void cnm_process_name(char *name, size_t size);

/* Unmaps the ring `queue` belongs to (created by cnm_ring_create in this process). */
void cnm_ring_unmap(cnm_queue *queue);

/* The header of the mapped ring file at `memory` (`size` bytes), or NULL when it is not a ring of
 * `record_layout` (wrong magic, version, layout, or a queue that does not fit). */
const cnm_ring_header *cnm_ring_header_check(const void *memory, size_t size, uint64_t record_layout);
static inline cnm_queue *cnm_ring_queue(void *memory) {
  return (cnm_queue *)((unsigned char *)memory + CNM_RING_QUEUE_OFFSET);
}

/* ---- fork: the child gets a clean table and, for a ring, a ring of its own ---------------------- */

/* The pid records carry: one getpid() at start and after each fork, not one per record. */
extern int32_t cnm_pid;
static inline int32_t cnm_current_pid(void) { return cnm_pid; }

/* A child made with vfork (Python's subprocess, before its exec) runs in its parent's memory, with
 * no fork handler run and a descriptor table of its own: what it closes is its copy, and the
 * connection table it sees is its parent's, which it must leave alone. Its pid is not the one the
 * monitor knows. A system call: for the close paths of tracked connections only. */
static inline bool cnm_in_vfork_child(void) { return (int32_t)getpid() != cnm_pid; }

/* Installs the fork handlers once. `ring_pattern` is the ring's pattern (copied), or NULL when
 * records go to an in-process queue (a fork child then records nothing: no thread consumes it). */
void cnm_fork_handling_set_up(const char *ring_pattern, size_t capacity, size_t record_size,
                              uint64_t record_layout);


/* ---- the originals of the hooked functions, and the TLS libraries' functions the hooks call ---- */
#include "cnm_originals.h"

/* ---- the connection table ------------------------------------------------------------------------
 * Indexed by file descriptor. `cnm_tracked[fd]` is nonzero for descriptors that are tracked network
 * connections: a hook on any other descriptor costs the bounds check and that one byte load. It is
 * CNM_EXCHANGING once the connection has carried an HTTP exchange and Swift still reads both its
 * directions: the receiving hooks then send its calls to the path that prefetches the lines an
 * exchange touches. Only a hint for that: the head's watch flags decide what the hooks do with the bytes.
 * `cnm_states` points at `cnm_capacity` entries of `slot_size` bytes (a Swift struct) in memory
 * mapped without reserve, so only descriptors in use cost pages. */

extern uint32_t cnm_capacity __attribute__((visibility("hidden")));
extern uint8_t *cnm_tracked __attribute__((visibility("hidden")));
#define CNM_TRACKED 1
#define CNM_EXCHANGING 2
extern unsigned char *cnm_states;
extern size_t cnm_slot_size;

/* Maps the table for every descriptor the process may open (RLIMIT_NOFILE's hard limit, at most
 * 1 Mi) with entries of `slot_size` bytes. Returns false when the memory cannot be mapped. */
bool cnm_table_set_up(size_t slot_size);

/* ---- HTTP/2 connection states (h2_pool.c) --------------------------------------------------------
 * An HTTP/2 connection's readers, HPACK tables and streams take ~200 KB, far more than the table's
 * entries can carry for every descriptor: they come from a pool, mapped once (MAP_NORESERVE: a page
 * is memory only once a connection touches it) and taken when a connection is found to speak
 * HTTP/2. Taking and giving back never block: a bitmap changed with atomic operations. */
#define CNM_H2_POOL_CAPACITY 1024u
/* Maps the pool for entries of `entry_size` bytes (once; later calls do nothing). False when the
 * memory cannot be mapped. */
bool cnm_h2_pool_set_up(size_t entry_size);
/* A free entry (its bytes as the last connection left them), or NULL when all are taken or the pool
 * was never set up. `generation` gets a number no other taking of any entry got. */
void *cnm_h2_pool_take(uint32_t *generation);
/* Gives an entry taken back. An entry of another copy's pool (the injected library's, which the
 * monitor adopted with its connection: cnm_client_h2) is left alone. */
void cnm_h2_pool_give_back(void *entry);
/* Entries taken now. */
uint32_t cnm_h2_pool_in_use(void);
/* In a fork's child: the taken entries' connections made the child's (ch2_connection_forked; an
 * entry is a ch2_connection at its start). */
void cnm_h2_pool_after_fork(void);
/* The stream tables a connection borrows while more streams are in flight than its own 128 slots
 * hold (ch2_stream_callbacks' `more_slots`): 128 of ~133 KB, mapped with the pool. */
#define CNM_H2_TABLE_POOL_CAPACITY 128u
/* A free table, its `give_back` set (to this pool), or NULL when all are taken. */
struct ch2_stream_table *cnm_h2_more_stream_slots(void);
/* Tables borrowed now. */
uint32_t cnm_h2_tables_in_use(void);

/* ---- the lines an exchange touches, prefetched before the receiving system call -----------------
 * A server's entry is cold by the time its connection's next request comes: the kernel's work for
 * the other connections in between evicted it. The Swift slow path then reads its lines one after
 * another, each a miss (~80 ns here). The receiving hooks of a CNM_EXCHANGING connection (the
 * call that opens an exchange; the sends follow with the lines cached) prefetch them all before
 * calling the original, so the misses are served while the kernel works (io_hooks.c). The
 * offsets come from the Swift layouts (`ExchangeLines`), set once before any connection is tracked. */
#define CNM_PREFETCH_LINES_MAX 32
typedef struct cnm_prefetch_lines {
  uint32_t entry_count;   /* lines of a connection's entry */
  uint32_t record_count;  /* lines of the record queue's next slot */
  uint16_t entry[CNM_PREFETCH_LINES_MAX];
  uint16_t record[CNM_PREFETCH_LINES_MAX];
} cnm_prefetch_lines;
extern cnm_prefetch_lines cnm_exchange_lines __attribute__((visibility("hidden")));
/* Copies the offsets (at most CNM_PREFETCH_LINES_MAX of each) into cnm_exchange_lines. */
void cnm_set_exchange_lines(const uint16_t *entry, uint32_t entry_count, const uint16_t *record, uint32_t record_count);
/* The lines an HTTP/2 stream's record writes in its slot (`ExchangeLines`), prefetched for the
 * next record as soon as one is published (cnm_prefetch_next_record, from RawRecord.emit). A
 * stream's record is written in the middle of a read that no hook prefetched for, often right
 * after another stream's; its stores to a line no prefetch fetched wait ~0.16 µs, and so does the
 * compare-and-swap that gives the stream's slot back right after (perf on nginx, varied TLS h2:
 * ch2_stream_release 0.14 µs a stream without these prefetches). At most CNM_PREFETCH_LINES_MAX. */
void cnm_set_stream_record_lines(const uint16_t *lines, uint32_t count);
void cnm_prefetch_next_record(void);

/* The entry of `fd` whether tracked or not; NULL past the table. */
static inline void *cnm_slot(int fd) {
  if ((unsigned)fd >= cnm_capacity) return NULL;
  return cnm_states + (size_t)fd * cnm_slot_size;
}

/* One past the highest descriptor ever tracked: how far a walk over every tracked connection goes. */
extern uint32_t cnm_tracked_limit;
static inline uint32_t cnm_get_tracked_limit(void) { return __atomic_load_n(&cnm_tracked_limit, __ATOMIC_ACQUIRE); }

static inline void cnm_set_tracked(int fd, bool tracked) {
  if ((unsigned)fd >= cnm_capacity) return;
  if (tracked) {
    uint32_t limit = __atomic_load_n(&cnm_tracked_limit, __ATOMIC_RELAXED);
    while (limit <= (uint32_t)fd &&
           !__atomic_compare_exchange_n(&cnm_tracked_limit, &limit, (uint32_t)fd + 1, true, __ATOMIC_RELEASE,
                                        __ATOMIC_RELAXED)) {
    }
  }
  __atomic_store_n(&cnm_tracked[fd], tracked ? CNM_TRACKED : 0, __ATOMIC_RELEASE);
}

/* Whether a tracked connection is CNM_EXCHANGING (see cnm_tracked). Changes a nonzero entry only,
 * so that a connection closed meanwhile on another thread is never tracked again. */
static inline void cnm_set_exchanging(int fd, bool exchanging) {
  if ((unsigned)fd >= cnm_capacity) return;
  uint8_t state = __atomic_load_n(&cnm_tracked[fd], __ATOMIC_RELAXED);
  uint8_t wanted = exchanging ? CNM_EXCHANGING : CNM_TRACKED;
  while (state != 0 && state != wanted &&
         !__atomic_compare_exchange_n(&cnm_tracked[fd], &state, wanted, true, __ATOMIC_RELEASE, __ATOMIC_RELAXED)) {
  }
}

__attribute__((always_inline)) static inline const cnm_original_functions *cnm_original(void) { return &cnm_originals; }
static inline cnm_openssl_functions *cnm_ssl(void) { return &cnm_openssl; }

/* The queue completed records go through, from the hooks to the recorder thread. */
extern cnm_queue *cnm_records;
static inline cnm_queue *cnm_record_queue(void) { return cnm_records; }
static inline void cnm_set_record_queue(cnm_queue *queue) { cnm_records = queue; }

/* ---- the data-path hooks ------------------------------------------------------------------------
 * read, readv, recv, recvfrom, recvmsg, write, writev, send, sendto, sendmsg, sendfile(64): every
 * byte the process moves passes here, and close: every descriptor it opens ends here. So these
 * thirteen are written in C. Each calls the original, then costs a bounds check, a byte load and
 * a branch for a descriptor that is not a tracked connection (measured with callgrind:
 * scripts/bench-hooks). The Swift equivalents cost about twice as much: the Swift optimizer
 * merges their identical bodies behind thunks, and cannot inline a C accessor. For a tracked
 * connection they count the bytes, take an exchange that repeats the last one (the replay below),
 * or call the Swift slow path. */

ssize_t cnm_hook_read(int fd, void *buffer, size_t count);
ssize_t cnm_hook_readv(int fd, const struct iovec *vector, int count);
ssize_t cnm_hook_recv(int fd, void *buffer, size_t count, int flags);
ssize_t cnm_hook_recvfrom(int fd, void *buffer, size_t count, int flags, struct sockaddr *address,
                          socklen_t *length);
ssize_t cnm_hook_recvmsg(int fd, struct msghdr *message, int flags);
ssize_t cnm_hook_write(int fd, const void *buffer, size_t count);
ssize_t cnm_hook_writev(int fd, const struct iovec *vector, int count);
ssize_t cnm_hook_send(int fd, const void *buffer, size_t count, int flags);
ssize_t cnm_hook_sendto(int fd, const void *buffer, size_t count, int flags, const struct sockaddr *address,
                        socklen_t length);
ssize_t cnm_hook_sendmsg(int fd, const struct msghdr *message, int flags);
ssize_t cnm_hook_sendfile(int out_fd, int in_fd, off_t *offset, size_t count);
ssize_t cnm_hook_sendfile64(int out_fd, int in_fd, off_t *offset, size_t count);
int cnm_hook_close(int fd);
/* What a data-path hook does after its original moved `result` bytes on the tracked connection
 * `fd`, for a caller of the original of its own (the injected library's exported functions). */
void cnm_account_call(int fd, bool received, const void *buffer, const struct iovec *vector, int vector_count,
                      ssize_t result) __attribute__((visibility("hidden")));
/* The same when `fd` is a tracked connection, else nothing: for a call the injected library was
 * moving when the monitor took its connections over. */
void cnm_account_tracked_call(int fd, bool received, const void *buffer, const struct iovec *vector,
                              int vector_count, ssize_t result);

/* ---- simple exchanges, recorded by the hooks alone (exchange_replay.c, simple_heads.c) ---------
 * Most exchanges on a keep-alive connection are simple: a request of any method but CONNECT,
 * without a body or with one of known length or chunked, answered by a head and a body of known
 * length or chunked, or none (or, the connection's last, one that runs to the close). Once the
 * Swift path has recorded an exchange on such a connection (not its first), with nothing under
 * way after it, it arms the connection's replay: a template of the record it wrote, of which the
 * hooks reuse the connection's part. The hooks then record each simple exchange themselves: the
 * request head at the start of a call (or in pieces, in the calls that follow) and its body in
 * that call and any that follow, then (after any 100 Continue) the response head at the start of
 * a call and its body likewise, whatever they carry (sendfile too), to their lengths. A head that
 * repeats the one before (a poller, a load generator, a server's answers within one second)
 * costs a compare; another is read by the small parsers of simple_heads.c (a strict subset of the
 * Swift parser's rules) and copied into the entry. Then two clock reads, and the record written
 * into a slot from the template, the request head's fields and the response's status and length.
 * Anything else (a head these parsers refuse, an answer before the request's body ended but a 100
 * Continue, another thread, an SSL call) goes to the Swift path as before, which first stops the
 * replay and takes over what it did (`takeOverFromReplay`, ExchangeReplay.swift): the exchanges
 * it recorded, a request it took whose response it could not, and a response it was sending or
 * receiving, which Swift then parses from the copies as of when they moved.
 *
 * `state` is the only word two threads write: the replays done << 7, a request head begun, the
 * interim answers the exchange under way had, the parts stopped halfway that Swift has yet to
 * parse, and the phase.
 * The owner is the thread that moved the whole last exchange; no other thread replays. */
enum {
  CNM_REPLAY_PHASE = 3,      /* the phase's bits: */
  CNM_REPLAY_OFF = 0,        /*   the hooks hand every call to Swift */
  CNM_REPLAY_ARMED = 1,      /*   between exchanges: the next request may be simple */
  CNM_REPLAY_REQUESTED = 2,  /*   the hooks took a request (at replay_start): its response may be simple */
  CNM_REPLAY_RESPONDING = 3, /*   they took its response head (at replay_first_byte) and part of its body */
  CNM_REPLAY_REQUEST_PENDING = 4,  /* stopped after taking a request: Swift has yet to parse it */
  CNM_REPLAY_RESPONSE_PENDING = 8, /* stopped halfway through its response: the same */
  /* The interim answers (CNM_REPLAY_INTERIM, at most 3) the hooks took before the response under
   * way, the first at replay_first_byte: counted while the replay goes on, and, once it stopped,
   * pending with its response's part until Swift parses them. */
  CNM_REPLAY_INTERIMS = 0x30,
  CNM_REPLAY_INTERIM_ONE = 0x10,
  /* ARMED, the hooks hold the first replay_request_staged bytes of a request head that goes on in
   * the next call (nginx reads 1 KiB at a time) in replay_request_staging, which moved at
   * replay_start; once the replay stopped, pending until Swift parses them. */
  CNM_REPLAY_PARTIAL = 0x40,
  CNM_REPLAY_COUNT_SHIFT = 7,
};
/* The one interim answer the hooks take: what servers send a client whose request said `Expect:
 * 100-continue` (curl uploading with -T, or a body over 1 MiB) before it sends the body. The
 * Swift parser reads it as an informational response: its bytes count in the final response's, and
 * its first byte is the exchange's first byte. */
#define CNM_REPLAY_INTERIM "HTTP/1.1 100 Continue\r\n\r\n"
#define CNM_REPLAY_INTERIM_LENGTH 25
/* The template: a record's first line, its connection's identity (or, for a connection's first
 * exchange, its setup and identity), then its request head: its scalars, and its text (a method,
 * a target, a Host; 1 byte more, as its method is copied in one 16-byte move). */
enum { CNM_REPLAY_TEXT_CAPACITY = 1 + CNM_SIMPLE_METHOD_CAPACITY + CNM_SIMPLE_TARGET_CAPACITY + CNM_SIMPLE_HOST_CAPACITY };
#define CNM_REPLAY_RECORD_BYTES (64 + 256 + CNM_REPLAY_TEXT_CAPACITY)

typedef struct cnm_replay_template {
  uint64_t unix_offset;     /* wall clock minus monotonic clock at the connection's start */
  uint16_t identity_length; /* the connection's part: record[64 ..< 64 + identity_length] */
  uint16_t run_length;      /* and the last request's head after it, as a record holds it: record[64 ..<
                               64 + run_length], one run of a slot (the hooks'); 0: not written yet */
  /* The connection's first exchange is next, and the connection's part runs from its setup
   * (cnm_replay_fields.setup, not .identity): a template the injected library made at connect
   * (CShims/CElfHookPreload/clients.c). Once that exchange is recorded, the template keeps the
   * identity alone and marks its records reused, as the templates Swift makes. */
  bool first_exchange;
  unsigned char record[CNM_REPLAY_RECORD_BYTES];
} cnm_replay_template;

/* Where the hooks write a record's fields (Swift's layouts: RawRecord, HTTPHead), set once before
 * any connection is tracked. Offsets in a record slot but for the five in its request head. */
typedef struct cnm_replay_fields {
  uint16_t start_unix_ns;
  uint16_t duration_ns;
  uint16_t first_byte_ns; /* + 1: 0 means no response byte */
  uint16_t status;
  uint16_t request_bytes;
  uint16_t response_bytes;
  uint16_t identity;      /* the connection's part (the template's) */
  uint16_t setup;         /* where a new connection's part starts (a first exchange's template) */
  uint16_t reused;        /* http_reused, in the first line */
  uint16_t protocol;      /* http_protocol, in the first line: its request's version */
  uint16_t request_head;  /* the request's HTTPHead, and in it: */
  uint16_t text;          /* method, target, Host, packed */
  uint16_t scalars_length; /* the bytes before the text (cnm_replay_request_scalars) */
} cnm_replay_fields;
extern cnm_replay_fields cnm_replay_record_fields __attribute__((visibility("hidden")));
/* Sets the fields from the record's layout as C knows it (cnm_record_layout.h). */
void cnm_replay_fields_set_up(void);
/* Writes the scalars of the HTTPHead the Swift parser makes of the simple request `request` (its
 * scalars_length bytes) at `scalars`. */
void cnm_replay_request_scalars(const cnm_simple_request *request, void *scalars);
static inline cnm_replay_fields cnm_replay_fields_in_use(void) { return cnm_replay_record_fields; }

/* What tells one thread from another in a hook: its thread pointer, the same in every image (the
 * injected library's copy of this code and the monitor's name a thread alike: a replay the
 * library armed keeps its owner when the monitor takes the connection over). */
static inline const void *cnm_thread_identity(void) {
  const void *self;
#if defined(__x86_64__)
  __asm__("mov %%fs:0, %0" : "=r"(self));
#elif defined(__aarch64__)
  __asm__("mrs %0, tpidr_el0" : "=r"(self));
#else
  self = (const void *)&cnm_guard_depth;
#endif
  return self;
}

/* What the hooks do with a direction's socket bytes (a connection head's watch_sent and
 * watch_received, set by Swift): count them; hand them to Swift (a connect in progress, HTTP/1.x
 * read from them, a direction not decided yet); or read them as HTTP/2 themselves, as the request
 * direction or the response direction (h2_reading.c). */
#define CNM_WATCH_NONE 0
#define CNM_WATCH_SWIFT 1
#define CNM_WATCH_H2_REQUESTS 2
#define CNM_WATCH_H2_RESPONSES 3

/* What the OpenSSL data hooks do with a direction's plaintext (a connection head's
 * plaintext_watch_sent and plaintext_watch_received, set by Swift): leave the whole call to
 * Swift's hook (a handshake not over); count it and offer it to the replay; the same, then hand
 * what the replay did not take to Swift's parser; or read it as HTTP/2, as the request direction
 * or the response direction (ssl_data_path.c). */
#define CNM_PLAINTEXT_SWIFT_HOOK 0
#define CNM_PLAINTEXT_COUNT 1
#define CNM_PLAINTEXT_PARSE 2
#define CNM_PLAINTEXT_H2_REQUESTS 3
#define CNM_PLAINTEXT_H2_RESPONSES 4

/* The head of every connection-table entry (offset 0 of the Swift struct): what the data-path
 * hooks read and update themselves, so a call on a tracked connection whose bytes Swift need not
 * see costs one atomic add. Swift sets the watch values (CNM_WATCH_…) as what it needs of a
 * direction's bytes changes. */
typedef struct cnm_connection_head {
  uint64_t bytes_sent;
  uint64_t bytes_received;
  uint8_t watch_sent;
  uint8_t watch_received;
  uint8_t is_tls;  /* socket bytes are ciphertext; the SSL hooks see the plaintext */
  uint8_t requests_received; /* for the replay: requests arrive (a server), or leave (a client) */
  uint8_t inherited; /* a fork child's copy of its parent's connection, its counts zeroed (fork_reset.c) */
  /* What the OpenSSL hooks do with each direction's plaintext (CNM_PLAINTEXT_…, set by Swift). */
  uint8_t plaintext_watch_sent;
  uint8_t plaintext_watch_received;
  uint8_t forked_open; /* (a parent's) the process forked while the connection was open: a child
                          holds a copy, and records it if it serves it (fork_reset.c) */
  /* The replay: its state, when it took the request under way, and its owner, in the line the
   * hooks read first. */
  uint64_t replay_state;
  uint64_t replay_start;
  const void *replay_owner;
  /* The response under way (RESPONDING): when its head went, and the body bytes still to come
   * (its Content-Length's), or where its chunked body is, or the bytes so far of one that runs to
   * the close. */
  uint64_t replay_first_byte;
  uint64_t replay_body_left;
  cnm_chunked_body replay_chunked;
  uint64_t replay_body_to_close;
  /* The request under way (REQUESTED): its body bytes still to come (of a chunked body: 1 until
   * it ended), and where its chunked body is. */
  uint64_t replay_request_body_left;
  cnm_chunked_body replay_request_chunked;
  cnm_replay_template replay;
  /* The last heads the hooks read, each field with its bytes: those of the exchange under way,
   * and what the next is compared with. */
  cnm_simple_request replay_request;
  cnm_simple_response replay_response;
  unsigned char replay_request_bytes[CNM_SIMPLE_HEAD_CAPACITY];
  unsigned char replay_response_bytes[CNM_SIMPLE_HEAD_CAPACITY];
  /* A request head begun (CNM_REPLAY_PARTIAL), its first replay_request_staged bytes, until its
   * blank line comes: then read beside the last one, whose lines it mostly repeats. Past the
   * lines an exchange touches (ExchangeLines.swift). */
  uint64_t replay_request_staged;
  unsigned char replay_request_staging[CNM_SIMPLE_HEAD_CAPACITY];
} cnm_connection_head;

/* Counts `count` socket bytes the connection `head` received or sent. */
static inline void cnm_count_bytes(cnm_connection_head *head, bool received, uint64_t count) {
  __atomic_fetch_add(received ? &head->bytes_received : &head->bytes_sent, count, __ATOMIC_RELAXED);
}

/* Stops the replay: it goes OFF, with what it took of the exchange under way pending (a request
 * when REQUESTED; the request and the response when RESPONDING; the interim answers and a head
 * begun, whose bits stay as they were). Returns the state after. */
static inline uint64_t cnm_replay_stop(cnm_connection_head *head) {
  uint64_t state = __atomic_load_n(&head->replay_state, __ATOMIC_ACQUIRE);
  for (;;) {
    uint64_t phase = state & CNM_REPLAY_PHASE, next = state & ~(uint64_t)CNM_REPLAY_PHASE;
    if (phase == CNM_REPLAY_OFF) return state;
    if (phase >= CNM_REPLAY_REQUESTED) next |= CNM_REPLAY_REQUEST_PENDING;
    if (phase == CNM_REPLAY_RESPONDING) next |= CNM_REPLAY_RESPONSE_PENDING;
    if (__atomic_compare_exchange_n(&head->replay_state, &state, next, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
      return next;
  }
}

/* In a fork child: the connection under `head` is the child's copy of its parent's, which the child
 * records only if it moves bytes on it (its counts zeroed, marked inherited). The hooks' replay is
 * the parent's: its template names the parent, and the forking thread, the child's only one, would
 * be its owner; it is stopped. (fork_reset.c for the monitor, clients.c for the injected library.) */
static inline void cnm_inherit_connection(cnm_connection_head *head) {
  head->bytes_sent = 0;
  head->bytes_received = 0;
  head->inherited = 1;
  head->forked_open = 0;
  cnm_replay_stop(head);
}

/* Takes the parts a stopped replay left pending among `parts` (CNM_REPLAY_REQUEST_PENDING,
 * _RESPONSE_PENDING, _INTERIMS, _PARTIAL): returns their bits, nonzero for the one caller that
 * gets them, which must have Swift parse them. */
static inline uint64_t cnm_replay_claim(cnm_connection_head *head, uint64_t parts) {
  uint64_t state = __atomic_load_n(&head->replay_state, __ATOMIC_ACQUIRE);
  while (state & parts) {
    if (__atomic_compare_exchange_n(&head->replay_state, &state, state & ~parts, false, __ATOMIC_ACQ_REL,
                                    __ATOMIC_ACQUIRE))
      return state & parts;
  }
  return 0;
}

/* Arms a stopped replay with nothing pending (`state`) once Swift wrote the template, for the
 * calling thread. False when the state changed meanwhile (then it
 * stays off). */
static inline bool cnm_replay_arm(cnm_connection_head *head, uint64_t state) {
  head->replay_owner = cnm_thread_identity();
  return __atomic_compare_exchange_n(&head->replay_state, &state, state | CNM_REPLAY_ARMED, false,
                                     __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
}

/* For the hooks: takes a call that moved `result` bytes on a connection whose replay is under way
 * (ARMED, REQUESTED, RESPONDING) as part of a simple exchange (its bytes counted, the record made
 * at the response's last byte), or, when it is not one, hands it to Swift (cnm_on_received,
 * cnm_on_sent). */
void cnm_replay_take(cnm_connection_head *head, bool received, const void *buffer, const struct iovec *vector,
                     int vector_count, ssize_t result) __attribute__((visibility("hidden")));

/* At the close, by the owner: records the response under way when its body runs to the close (as
 * the Swift parser completes one at the close). False when there was none, or another thread
 * stopped the replay meanwhile. */
bool cnm_replay_end_at_close(cnm_connection_head *head) __attribute__((visibility("hidden")));

/* For the TLS hooks: takes `count` bytes of plaintext (> 0) that an SSL call on the connection
 * moved when they are part of a simple exchange under way, as cnm_replay_take takes a socket's;
 * false (Swift parses them) otherwise. The plaintext byte counts are the caller's. */
bool cnm_replay_take_plaintext(cnm_connection_head *head, bool received, const void *buffer, size_t count);

/* The Swift slow path, set by NetMonitor.start: `result` bytes (> 0) moved on the connection in
 * `slot`; calls that moved nothing are not passed on. The bytes are in `buffer`, or in `vector` (readv,
 * recvmsg, writev, sendmsg); sendfile passes neither. */
typedef void (*cnm_traffic_callback)(void *slot, const void *buffer, const struct iovec *vector, int vector_count,
                                     ssize_t result);
extern cnm_traffic_callback cnm_on_received;
extern cnm_traffic_callback cnm_on_sent;
/* The Swift slow path of close, before the original closes the tracked connection `fd`: its
 * record is made. errno is the callback's to keep. */
typedef void (*cnm_close_callback)(int fd);
extern cnm_close_callback cnm_on_close;
static inline void cnm_set_traffic_callbacks(cnm_traffic_callback received, cnm_traffic_callback sent,
                                             cnm_close_callback closing) {
  cnm_on_received = received;
  cnm_on_sent = sent;
  cnm_on_close = closing;
}
/* Hands a call that moved `result` bytes on the connection `head` to the Swift slow path of its
 * direction. */
static inline void cnm_hand_to_swift(cnm_connection_head *head, bool received, const void *buffer,
                                     const struct iovec *vector, int vector_count, ssize_t result) {
  (received ? cnm_on_received : cnm_on_sent)(head, buffer, vector, vector_count, result);
}

/* ---- HTTP/2 directions the hooks read themselves (h2_reading.c) ---------------------------------
 * A plaintext direction found to be HTTP/2 (CNM_WATCH_H2_…) goes from the hook straight to the
 * frame reader (CHTTP2's ch2_connection_read), with the connection's entry as the streams'
 * callbacks' context; Swift is called only by those callbacks, and when the reader stops. TLS
 * plaintext of a direction found to be HTTP/2 goes there from the TLS hooks the same way. */
/* What stopped a direction the hooks read (a ch2_status other than CH2_OK), for Swift to record:
 * the request direction's when `requests`. */
typedef void (*cnm_h2_stopped_callback)(void *slot, bool requests, int status);
/* Set once, before any connection is tracked: where in a connection's entry the address of its
 * HTTP/2 state is (a 64-bit word, 0 while it has none), and the callback. */
void cnm_set_h2_reading(size_t connection_offset, cnm_h2_stopped_callback stopped);
/* Reads the `result` bytes (> 0) of one call, in `buffer` or `vector`, on a direction whose watch
 * is CNM_WATCH_H2_REQUESTS (`requests`) or CNM_WATCH_H2_RESPONSES, and counts them. */
void cnm_h2_read(cnm_connection_head *head, bool received, bool requests, const void *buffer,
                 const struct iovec *vector, int vector_count, ssize_t result) __attribute__((visibility("hidden")));
/* The same for `count` bytes (> 0) of TLS plaintext in `buffer`, which the TLS hooks counted, of a
 * direction Swift found to be HTTP/2 (the request direction when `requests`). */
void cnm_h2_read_plaintext(cnm_connection_head *head, bool requests, const void *buffer, size_t count);

/* Zeros the HTTP parser is fed for bytes it cannot see (sendfile), without allocating. */
#define cnm_zero_byte_count 16384
const void *cnm_zero_bytes(void);

/* The thirteen data-path hooks, in the order of cnm_hook_name (they come first). */
size_t cnm_data_path_hook_count(void);
void *cnm_data_path_hook(size_t index);

/* ---- the calls that close descriptors besides close (descriptor_hooks.c) -------------------------
 * dup2 and dup3 onto an open descriptor, close_range, closefrom: a tracked connection among the
 * descriptors they close is recorded first, as close records it. In the order of cnm_hook_name
 * (they come last). */
int cnm_hook_dup2(int source, int replaced);
int cnm_hook_dup3(int source, int replaced, int flags);
int cnm_hook_close_range(unsigned int first, unsigned int last, int flags);
void cnm_hook_closefrom(int lowest);
size_t cnm_descriptor_hook_count(void);
void *cnm_descriptor_hook(size_t index);

#include "cnm_tls.h" /* the TLS hooks' part, which needs the connection head */

#endif
