/*
 * cnm_records.h — what C writes into a record queue or ring itself: the slot size every record
 * fits in, and the dns record, written at a name lookup by the monitor's getaddrinfo hook and by
 * the injected library before the monitor is loaded (CShims/CElfHookPreload). Swift's RawRecord
 * (connection and http records) starts like every record here: its kind, then the pid.
 */
#ifndef CNM_RECORDS_H
#define CNM_RECORDS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

struct addrinfo;
typedef struct cnm_queue cnm_queue;

/* Every queue and ring slot holds one record of at most this many bytes. Rings carry
 * CNM_RECORD_LAYOUT in their header: a reader built with another layout refuses the file. Bump the
 * version whenever a stored field of any record changes. */
#define CNM_RECORD_SLOT_SIZE 1344u /* whole cache lines: a record's fields keep their lines */
#define CNM_RECORD_LAYOUT_VERSION 8ull
#define CNM_RECORD_LAYOUT ((uint64_t)CNM_RECORD_SLOT_SIZE | CNM_RECORD_LAYOUT_VERSION << 32)

/* The first byte of every record. */
enum { CNM_RECORD_DNS = 1, CNM_RECORD_CONNECTION = 2, CNM_RECORD_HTTP = 3 };

/* A socket address as records keep it; the layout of Swift's PeerAddress. */
typedef struct cnm_address {
  uint16_t family; /* AF_INET, AF_INET6, or 0 */
  uint16_t port;   /* host byte order */
  uint8_t bytes[16];
} cnm_address;

/* Reads `length` bytes of a socket address: the family whenever it is there, the port and the
 * address bytes for IPv4 and IPv6 (anything else keeps only its family). Returns whether it is
 * an internet address. */
bool cnm_address_read(const struct sockaddr *socket_address, socklen_t length, cnm_address *address);

#define CNM_DNS_ADDRESSES 8
#define CNM_DNS_HOST_SIZE 256

/* One getaddrinfo call. */
typedef struct cnm_dns_record {
  uint8_t kind; /* CNM_RECORD_DNS */
  int32_t pid;
  uint64_t start_unix_ns;
  uint64_t duration_ns;
  int32_t error;        /* the EAI_* code; 0 when the lookup succeeded */
  int32_t system_errno; /* errno for EAI_SYSTEM, else 0 */
  uint16_t host_length;
  uint8_t address_count; /* distinct internet addresses among the answers, at most CNM_DNS_ADDRESSES */
  cnm_address addresses[CNM_DNS_ADDRESSES];
  char host[CNM_DNS_HOST_SIZE]; /* the name looked up, cut at CNM_DNS_HOST_SIZE bytes; not terminated */
} cnm_dns_record;

_Static_assert(sizeof(cnm_dns_record) <= CNM_RECORD_SLOT_SIZE, "a dns record fits a slot");

/* Fills `record` (kind, pid, the name, the answers' distinct internet addresses, the error) for a
 * lookup of `host` that started at `start_unix_ns` and took `duration_ns`. No allocation. */
void cnm_dns_record_fill(cnm_dns_record *record, const char *host, int status, int system_errno,
                         const struct addrinfo *answers, uint64_t start_unix_ns, uint64_t duration_ns);

/* Copies `record` into a slot of `queue`; false when the queue is full (the drop is counted). */
bool cnm_dns_record_emit(cnm_queue *queue, const cnm_dns_record *record);

/* ---- recent name resolutions: the name a connection's address was looked up by -----------------
 * (resolutions.c). The getaddrinfo hook remembers each lookup's addresses; the connect hook asks
 * for its peer's. Lock-free on both sides: safe in a signal handler and after fork. */
#define CNM_RESOLUTION_HOST_SIZE 128

typedef struct cnm_resolution {
  char host[CNM_RESOLUTION_HOST_SIZE]; /* the name, cut at CNM_RESOLUTION_HOST_SIZE bytes; not terminated */
  uint32_t host_length;
  bool has_lookup_time; /* this connection is the first to the lookup's address: the time is its */
  uint64_t lookup_ns;
} cnm_resolution;

/* Remembers the answers of `lookup`, made on `thread` (pthread_self). */
void cnm_resolutions_remember(const cnm_dns_record *lookup, uint64_t thread);

/* The lookup that named `address` (an IPv4-mapped IPv6 address is its IPv4 one), made on `thread`
 * or another: of the 64 most recent answers that hold it, the newest of the best kind there is —
 * a lookup for the address's port (or for no port) before one for another service, then one whose
 * time no connection took, then this thread's before another's (a resolver thread's). The time
 * goes to the first connection to its port that takes it; later ones (an address the client
 * cached) get the name alone. false when no lookup named it. */
bool cnm_resolutions_look_up(const cnm_address *address, uint64_t thread, cnm_resolution *found);

/* In a fork child: entries a parent's thread was writing are emptied. */
void cnm_resolutions_after_fork(void);
/* The table, and its next ticket: for the injected library, which hands its resolutions (and
 * which of them a connection took the time of) to the monitor it loads. */
const void *cnm_resolutions_table(uint64_t *next_ticket);
/* Takes another copy's table (cnm_resolutions_table) as this one's. */
void cnm_resolutions_adopt(const void *table, uint64_t next_ticket);

/* Nanoseconds on CLOCK_MONOTONIC and CLOCK_REALTIME (the vDSO: no system call). */
uint64_t cnm_monotonic_ns(void);
uint64_t cnm_unix_ns(void);

/* When the bytes being read moved: the clock now, or, while the monitor reads a call the injected
 * library handed to it (cnm_handed_call), when that call moved them (the library may have loaded
 * the monitor, or waited for another thread to, since). For the slow paths that time a call's
 * bytes; the C data path reads the clock itself. */
extern __thread uint64_t cnm_handed_call_time __attribute__((tls_model("initial-exec")));
static inline uint64_t cnm_call_time(void) {
  uint64_t handed = cnm_handed_call_time;
  return handed ? handed : cnm_monotonic_ns();
}
static inline void cnm_set_handed_call_time(uint64_t moved_at) { cnm_handed_call_time = moved_at; }

/* ---- from the injected library to the monitor it loads -------------------------------------------
 * What libElfHookPreload.so hands to libElfHookMonitor.so's elfhook_monitor_start: the ELFHOOK_*
 * settings, the ring it already created for the lookups it recorded itself (or NULL), and those
 * lookups, so the connections that follow know their host names. */
/* An HTTP/2 connection the injected library reads (CShims/CElfHookPreload/h2_clients.c): its state
 * (a ch2_connection in the library's pool: the monitor reads on with it where it is, and never
 * gives it back to its own pool), whether its responses were found to be HTTP/2 yet (the server's
 * first bytes: until then the monitor decides them), and which of its directions stopped being
 * read (a malformed frame or header block: the connection's http_stop says why). */
typedef struct cnm_client_h2 {
  void *connection; /* NULL: not HTTP/2 (or not read by the library) */
  uint8_t responses_seen;
  uint8_t requests_stopped;
  uint8_t responses_stopped;
} cnm_client_h2;

/* A call on a connection the injected library tracked whose bytes are the monitor's to read: a
 * socket call's `result` bytes (in `buffer` or `vector`), or, `plaintext`, the `result` bytes of
 * plaintext a TLS library's call moved over it, at `moved_at` (cnm_monotonic_ns). */
typedef struct cnm_handed_call {
  int fd;
  bool received;
  bool plaintext;
  const void *buffer;
  const struct iovec *vector;
  int vector_count;
  ssize_t result;
  uint64_t moved_at;
} cnm_handed_call;

typedef struct cnm_handoff {
  const char *pattern; /* ELFHOOK_OUTPUT */
  size_t capacity;     /* records per ring */
  int log_level;       /* 0 off, 1 error, 2 info */
  cnm_queue *ring;     /* the ring of this process (it reserves its memory as it fills); or NULL */
  const char *ring_path;
  /* The injected library's name resolutions (cnm_resolutions_table), or NULL. */
  const void *resolutions;
  uint64_t resolutions_next_ticket;
  /* The client connections the injected library tracked itself (CShims/CElfHookPreload/clients.c):
   * `count` entries of `entry_size` bytes at `entries`, each a cnm_connection_head then, at
   * `core_offset`, a cnm_connection_core; an entry is a connection when `tracked[fd]` is nonzero.
   * Their replays are stopped: the monitor takes each over as if its own replay had stopped. */
  const unsigned char *clients;
  const uint8_t *clients_tracked;
  uint32_t client_count;
  size_t client_entry_size;
  size_t client_core_offset;
  /* At `client_ssl_offset`, the TLS session (an SSL *, a gnutls_session_t) paired with the entry's
   * connection, or NULL: the monitor's TLS hooks find the connection under it from then on. */
  size_t client_ssl_offset;
  /* At `client_h2_offset`, the entry's cnm_client_h2. */
  size_t client_h2_offset;
  uint64_t last_connection_id; /* the connection ids the injected library gave: 1 … this */
  /* The call whose bytes made the library load the monitor, or NULL: the monitor reads it once it
   * took the connections over, before its hooks are in place, so before any other thread's call
   * (those waiting for it to start are handed over after). */
  const cnm_handed_call *call;
} cnm_handoff;

#endif
