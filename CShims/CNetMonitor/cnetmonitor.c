/* The out-of-line parts of cnetmonitor.h. */
#include "cnetmonitor.h"

#include <stdlib.h>
#include <string.h>

cnm_queue *cnm_records;

__thread int cnm_guard_depth __attribute__((tls_model("initial-exec")));

/* ---- originals ----------------------------------------------------------------------------------- */

#include <dlfcn.h>

cnm_original_functions cnm_originals;
cnm_openssl_functions cnm_openssl;
cnm_openssl_functions cnm_openssl_linked;
cnm_linked_openssl_originals cnm_linked_originals;
cnm_gnutls_functions cnm_gnutls;
cnm_nss_functions cnm_nss;

static const char *const cnm_hook_names[] = {
    "read",     "readv",       "recv",       "recvfrom",  "recvmsg",          "write",       "writev",
    "send",     "sendto",      "sendmsg",    "sendfile",  "sendfile64",       "close",       "shutdown",    "connect",
    "accept",   "accept4",     "getsockopt", "getaddrinfo", "SSL_do_handshake", "SSL_connect", "SSL_accept",
    "SSL_read", "SSL_read_ex", "SSL_write",  "SSL_write_ex", "dup2",     "dup3",        "close_range", "closefrom",
    "gnutls_handshake", "gnutls_record_send", "gnutls_record_send2", "gnutls_record_recv", "gnutls_record_recv_seq",
    "SSL_ForceHandshake", "SSL_ForceHandshakeWithTimeout", "PR_Read", "PR_Write", "PR_Recv", "PR_Send",
};
size_t cnm_hook_count(void) { return sizeof cnm_hook_names / sizeof cnm_hook_names[0]; }
const char *cnm_hook_name(size_t index) { return index < cnm_hook_count() ? cnm_hook_names[index] : NULL; }

_Static_assert(sizeof(cnm_original_functions) == sizeof cnm_hook_names / sizeof cnm_hook_names[0] * sizeof(void *),
               "one original per hooked name, in the same order");

void cnm_fill_missing_originals(void) {
  for (size_t i = 0; i < cnm_hook_count(); i++) {
    void **slot = cnm_original_slot(i);
    if (__atomic_load_n(slot, __ATOMIC_ACQUIRE)) continue;
    void *found = dlsym(RTLD_DEFAULT, cnm_hook_names[i]);
    if (found) __atomic_store_n(slot, found, __ATOMIC_RELEASE);
  }
}

void cnm_adopt_original(size_t index, void *forwarder, void *next) {
  if (index >= cnm_hook_count()) return;
  void **slot = cnm_original_slot(index);
  void *current = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
  if (current == forwarder || current == NULL) __atomic_compare_exchange_n(slot, &current, next, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
}

bool cnm_resolve_openssl(void *any_ssl_function) {
  if (cnm_openssl.SSL_get_fd) return true;
  Dl_info info;
  if (!any_ssl_function || !dladdr(any_ssl_function, &info) || !info.dli_fname) return false;
  void *library = dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
  if (!library) return false;
  cnm_openssl_functions found = {
      (int (*)(const void *))dlsym(library, "SSL_get_fd"),
      (int (*)(const void *, int))dlsym(library, "SSL_get_error"),
      (const char *(*)(const void *))dlsym(library, "SSL_get_version"),
      (const char *(*)(const void *, int))dlsym(library, "SSL_get_servername"),
      (int (*)(const void *))dlsym(library, "SSL_is_server"),
      (void (*)(const void *, const unsigned char **, unsigned int *))dlsym(library, "SSL_get0_alpn_selected"),
      (int (*)(const void *))dlsym(library, "SSL_is_init_finished"),
  };
  dlclose(library);
  if (!found.SSL_get_fd || !found.SSL_get_error) return false;
  cnm_openssl = found;
  return true;
}

bool cnm_resolve_gnutls(void *any_gnutls_function) {
  if (cnm_gnutls.transport_get_int) return true;
  Dl_info info;
  if (!any_gnutls_function || !dladdr(any_gnutls_function, &info) || !info.dli_fname) return false;
  void *library = dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
  if (!library) return false;
  cnm_gnutls_functions found = {
      (int (*)(void *))dlsym(library, "gnutls_transport_get_int"),
      (int (*)(void *))dlsym(library, "gnutls_protocol_get_version"),
      (const char *(*)(int))dlsym(library, "gnutls_protocol_get_name"),
      (int (*)(void *, cnm_gnutls_datum *))dlsym(library, "gnutls_alpn_get_selected_protocol"),
      (int (*)(int))dlsym(library, "gnutls_error_is_fatal"),
  };
  dlclose(library);
  if (!found.transport_get_int || !found.error_is_fatal) return false;
  cnm_gnutls = found;
  return true;
}

bool cnm_resolve_nss(void *any_nss_ssl_function) {
  if (cnm_nss.SSL_GetChannelInfo) return true;
  Dl_info info;
  if (!any_nss_ssl_function || !dladdr(any_nss_ssl_function, &info) || !info.dli_fname) return false;
  void *library = dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
  if (!library) return false;
  cnm_nss_functions found = {
      (int (*)(void *, cnm_nss_channel_info *, unsigned int))dlsym(library, "SSL_GetChannelInfo"),
      (int (*)(void *, int *, unsigned char *, unsigned int *, unsigned int))dlsym(library, "SSL_GetNextProto"),
      (int32_t(*)(void))dlsym(RTLD_DEFAULT, "PR_GetError"),
  };
  dlclose(library);
  if (!found.SSL_GetChannelInfo) return false;
  cnm_nss = found;
  return true;
}

#include <link.h>

bool cnm_image_contains(const void *header, uintptr_t load_bias, const void *address) {
  const ElfW(Ehdr) *elf = header;
  if (!elf || !address) return false;
  const ElfW(Phdr) *segments = (const ElfW(Phdr) *)((const unsigned char *)header + elf->e_phoff);
  for (ElfW(Half) i = 0; i < elf->e_phnum; i++) {
    uintptr_t start = load_bias + segments[i].p_vaddr;
    if (segments[i].p_type == PT_LOAD && (uintptr_t)address >= start && (uintptr_t)address - start < segments[i].p_memsz)
      return true;
  }
  return false;
}

/* ---- the connection table ---------------------------------------------------------------------- */

#include <sys/mman.h>
#include <sys/resource.h>

uint32_t cnm_capacity;
uint32_t cnm_tracked_limit;
uint8_t *cnm_tracked;
unsigned char *cnm_states;
size_t cnm_slot_size;
cnm_prefetch_lines cnm_exchange_lines;

void cnm_set_exchange_lines(const uint16_t *entry, uint32_t entry_count, const uint16_t *record,
                            uint32_t record_count) {
  if (entry_count > CNM_PREFETCH_LINES_MAX) entry_count = CNM_PREFETCH_LINES_MAX;
  if (record_count > CNM_PREFETCH_LINES_MAX) record_count = CNM_PREFETCH_LINES_MAX;
  for (uint32_t i = 0; i < entry_count; i++) cnm_exchange_lines.entry[i] = entry[i];
  for (uint32_t i = 0; i < record_count; i++) cnm_exchange_lines.record[i] = record[i];
  cnm_exchange_lines.entry_count = entry_count;
  cnm_exchange_lines.record_count = record_count;
}

static uint16_t stream_record_lines[CNM_PREFETCH_LINES_MAX];
static uint32_t stream_record_line_count;

void cnm_set_stream_record_lines(const uint16_t *lines, uint32_t count) {
  if (count > CNM_PREFETCH_LINES_MAX) count = CNM_PREFETCH_LINES_MAX;
  for (uint32_t i = 0; i < count; i++) stream_record_lines[i] = lines[i];
  stream_record_line_count = count;
}

void cnm_prefetch_next_record(void) {
  cnm_queue *records = cnm_records;
  if (records) cnm_queue_prefetch_next(records, stream_record_lines, stream_record_line_count);
}

static void *map_zeroed(size_t count) {
  void *memory = mmap(NULL, count, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  return memory == MAP_FAILED ? NULL : memory;
}

bool cnm_table_set_up(size_t slot_size) {
  if (cnm_states) return true;
  struct rlimit limit = {1024, 1024};
  getrlimit(RLIMIT_NOFILE, &limit);
  rlim_t wanted = limit.rlim_max > limit.rlim_cur ? limit.rlim_max : limit.rlim_cur;
  size_t capacity = wanted < 1024 ? 1024 : wanted > (1u << 20) ? (1u << 20) : (size_t)wanted;
  uint8_t *tracked = map_zeroed(capacity);
  unsigned char *states = map_zeroed(capacity * slot_size);
  if (!tracked || !states) {
    if (tracked) munmap(tracked, capacity);
    if (states) munmap(states, capacity * slot_size);
    return false;
  }
  cnm_tracked = tracked;
  cnm_slot_size = slot_size;
  cnm_states = states;
  __atomic_store_n(&cnm_capacity, (uint32_t)capacity, __ATOMIC_RELEASE);
  return true;
}

/* ---- SSL object → socket ------------------------------------------------------------------------ */

__thread void *cnm_current_ssl __attribute__((tls_model("initial-exec")));
__thread uint64_t cnm_current_ssl_start __attribute__((tls_model("initial-exec")));
__thread uint8_t cnm_current_ssl_call __attribute__((tls_model("initial-exec")));
__thread void *cnm_unjoined_ssl __attribute__((tls_model("initial-exec")));
__thread uint64_t cnm_unjoined_ssl_start __attribute__((tls_model("initial-exec")));
__thread int cnm_hello_fd __attribute__((tls_model("initial-exec")));
__thread uint64_t cnm_hello_id __attribute__((tls_model("initial-exec")));

#define SSL_MAP_SIZE 4096 /* a power of two */
#define SSL_MAP_PROBES 8

static struct ssl_map_entry {
  const void *ssl;
  int fd;
  uint64_t id;
} ssl_map[SSL_MAP_SIZE];

static size_t ssl_map_index(const void *ssl) {
  uintptr_t key = (uintptr_t)ssl;
  key ^= key >> 17;
  key *= 0x9e3779b97f4a7c15ull;
  return (size_t)(key >> 40) & (SSL_MAP_SIZE - 1);
}

void cnm_ssl_map_put(const void *ssl, int fd, uint64_t id) {
  size_t start = ssl_map_index(ssl);
  for (size_t probe = 0; probe < SSL_MAP_PROBES; probe++) {
    struct ssl_map_entry *entry = &ssl_map[(start + probe) & (SSL_MAP_SIZE - 1)];
    const void *current = __atomic_load_n(&entry->ssl, __ATOMIC_ACQUIRE);
    if (current == ssl || current == NULL || probe == SSL_MAP_PROBES - 1) {
      /* a stale entry of a freed SSL object may be replaced: callers check the slot they find */
      __atomic_store_n(&entry->fd, fd, __ATOMIC_RELAXED);
      __atomic_store_n(&entry->id, id, __ATOMIC_RELAXED);
      __atomic_store_n(&entry->ssl, ssl, __ATOMIC_RELEASE);
      return;
    }
  }
}

int cnm_ssl_map_get(const void *ssl, uint64_t *id) {
  size_t start = ssl_map_index(ssl);
  for (size_t probe = 0; probe < SSL_MAP_PROBES; probe++) {
    struct ssl_map_entry *entry = &ssl_map[(start + probe) & (SSL_MAP_SIZE - 1)];
    const void *current = __atomic_load_n(&entry->ssl, __ATOMIC_ACQUIRE);
    if (current == NULL) return -1; /* entries are replaced, never removed: none past an empty one */
    if (current == ssl) {
      *id = __atomic_load_n(&entry->id, __ATOMIC_RELAXED);
      return __atomic_load_n(&entry->fd, __ATOMIC_RELAXED);
    }
  }
  return -1;
}

void cnm_ssl_map_clear(void) { memset(ssl_map, 0, sizeof ssl_map); }
