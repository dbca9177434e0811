/* Loading libElfHookMonitor.so (elfhook_preload.h): the Swift monitor, with its own static Swift
 * runtime, loaded RTLD_LOCAL so that none of its symbols can interpose on the host's. */
#include "elfhook_preload.h"

#include <dlfcn.h>
#include <link.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#define MONITOR_FILE_NAME "libElfHookMonitor.so"

static char monitor_path[PATH_MAX];
/* The monitor's entry points for the connections the injected library tracked (clients.c). */
static elfhook_monitor_take_call_function monitor_take_call;
static elfhook_monitor_take_client_function monitor_take_client;
/* The call this thread is handing over while it may load the monitor (elfhook_hand_to_monitor):
 * the load hands it on to the monitor's start, and clears it. */
static __thread const cnm_handed_call *loading_call __attribute__((tls_model("initial-exec")));
/* The addresses of the monitor library's executable segments, once it is loaded
 * (elfhook_called_from_monitor): found once, so the check takes no lock and calls nothing. */
static uintptr_t monitor_code_start, monitor_code_end;

bool elfhook_locate_monitor(elfhook_log_level log) {
  Dl_info info;
  if (!dladdr((void *)elfhook_locate_monitor, &info) || !info.dli_fname || !info.dli_fname[0]) {
    if (log != ELFHOOK_LOG_OFF) elfhook_say_unmonitored("cannot find the path of the injected library");
    return false;
  }
  char resolved[PATH_MAX];
  const char *self = info.dli_fname;
  if (self[0] != '/') { /* a relative LD_PRELOAD entry: relative to today's working directory */
    if (!realpath(self, resolved)) {
      if (log != ELFHOOK_LOG_OFF) elfhook_say_unmonitored("cannot resolve the path of the injected library %s", self);
      return false;
    }
    self = resolved;
  }
  const char *slash = strrchr(self, '/');
  size_t directory_length = (size_t)(slash - self) + 1;
  if (directory_length + sizeof MONITOR_FILE_NAME > sizeof monitor_path) {
    if (log != ELFHOOK_LOG_OFF) elfhook_say_unmonitored("the path of the injected library is too long: %s", self);
    return false;
  }
  memcpy(monitor_path, self, directory_length);
  memcpy(monitor_path + directory_length, MONITOR_FILE_NAME, sizeof MONITOR_FILE_NAME);
  return true;
}

/* dl_iterate_phdr's callback: the executable segments of the image that holds `*data`'s address. */
static int note_code_of(struct dl_phdr_info *image, size_t size, void *data) {
  (void)size;
  uintptr_t inside = *(uintptr_t *)data, start = UINTPTR_MAX, end = 0;
  for (ElfW(Half) i = 0; i < image->dlpi_phnum; i++) {
    const ElfW(Phdr) *segment = &image->dlpi_phdr[i];
    if (segment->p_type != PT_LOAD || !(segment->p_flags & PF_X)) continue;
    uintptr_t low = image->dlpi_addr + segment->p_vaddr, high = low + segment->p_memsz;
    if (low < start) start = low;
    if (high > end) end = high;
  }
  if (inside < start || inside >= end) return 0;
  monitor_code_start = start;
  __atomic_store_n(&monitor_code_end, end, __ATOMIC_RELEASE);
  return 1;
}

static void find_monitor_code(uintptr_t inside) { dl_iterate_phdr(note_code_of, &inside); }

bool elfhook_load_monitor(const elfhook_preload_configuration *configuration, elfhook_forwarder *forwarders,
                          size_t count) {
  /* The `elfhook run` this process was started by has ended, or the ring could not be created
   * (said then): there is nowhere to record to. */
  if (elfhook_run_is_over(configuration) || elfhook_ring_failed()) return false;
  bool speak = configuration->log != ELFHOOK_LOG_OFF;
  /* RTLD_LAZY, as a library loaded at start is: binding all of the monitor's and libstdc++'s PLT
   * slots now would cost ~1,300 more symbol lookups through every image of the host (2.7 M
   * instructions, measured: BENCHMARKS.md). */
  void *library = dlopen(monitor_path, RTLD_LAZY | RTLD_LOCAL);
  if (!library) {
    const char *error = dlerror(); /* read, so the host's next dlerror() does not see it */
    if (speak) elfhook_say_unmonitored("cannot load the monitor: %s", error ? error : monitor_path);
    return false;
  }
  /* Never closed: a Swift runtime cannot be unloaded. */
  elfhook_monitor_start_function start = (elfhook_monitor_start_function)dlsym(library, "elfhook_monitor_start");
  elfhook_monitor_adopt_function adopt = (elfhook_monitor_adopt_function)dlsym(library, "elfhook_monitor_adopt");
  elfhook_monitor_take_call_function take_call =
      (elfhook_monitor_take_call_function)dlsym(library, "elfhook_monitor_take_call");
  elfhook_monitor_take_client_function take_client =
      (elfhook_monitor_take_client_function)dlsym(library, "elfhook_monitor_take_client");
  if (!start || !adopt || !take_call || !take_client) {
    dlerror();
    if (speak) elfhook_say_unmonitored("%s is not the monitor of this elfhook version", monitor_path);
    return false;
  }
  find_monitor_code((uintptr_t)start);
  monitor_take_call = take_call;
  monitor_take_client = take_client;
  cnm_handoff handoff = {.pattern = configuration->output, .capacity = configuration->capacity,
                         .log_level = (int)configuration->log, .call = loading_call};
  loading_call = NULL; /* the monitor reads it in its start, or, failing to start, never */
  elfhook_lookups_handoff(&handoff);
  elfhook_clients_handoff(&handoff);
  if (!handoff.ring) elfhook_note_output_filesystem(configuration); /* the monitor creates the ring */
  bool running = start(&handoff) == 0;
  elfhook_clients_handed_over(running);
  if (!running) return false;
  if (handoff.ring) elfhook_lookups_handed_over();
  for (size_t i = 0; i < count; i++) {
    /* Looked up now if no call has yet (a TLS library's name: NULL when it is not loaded). */
    forwarders[i].hook = adopt(forwarders[i].name, forwarders[i].self, elfhook_next((elfhook_export)i));
  }
  return true;
}

void elfhook_hand_to_monitor(const cnm_handed_call *call, const void *caller) {
  loading_call = call;
  bool takes = elfhook_monitor_takes(caller);
  bool read_at_start = loading_call == NULL; /* this thread loaded the monitor */
  loading_call = NULL;
  if (takes && !read_at_start && monitor_take_call) monitor_take_call(call);
}

void elfhook_monitor_take_client(const cnm_connection_head *head, const void *core) {
  if (monitor_take_client) monitor_take_client(head, core);
}

bool elfhook_called_from_monitor(const void *return_address) {
  uintptr_t end = __atomic_load_n(&monitor_code_end, __ATOMIC_ACQUIRE);
  return (uintptr_t)return_address >= monitor_code_start && (uintptr_t)return_address < end;
}
