/* LD_PRELOAD into a real program (curl): measures, inside that process, before its main runs,
 *  1. rebinding the 20 names NetMonitor hooks across every loaded image (cold: images parsed for
 *     the first time), its undo, and the same rebinding again (warm: no image parsed again);
 *  2. the cost the engine's dlopen hook adds to one dlopen of a library with no dependencies
 *     loaded yet (libelf, whose only dependency libz is loaded already), dlopen+dlclose repeated, without and with the hook, side by side.
 * Rebinding targets are never called: every rebinding is undone before the constructor returns,
 * so the host runs unchanged. Prints one block to stderr. */
#define _GNU_SOURCE
#include "elfhook.h"

#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static const char *const names[] = {
    "connect", "getaddrinfo", "SSL_do_handshake", "read",  "readv",    "recv",     "recvfrom",
    "recvmsg", "write",       "writev",           "send",  "sendto",   "sendmsg",  "sendfile",
    "close",   "shutdown",    "accept",           "accept4", "SSL_read", "SSL_write",
};
#define NAME_COUNT (sizeof names / sizeof names[0])

static void never_called(void) { abort(); }

static double now_us(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static int count_image(struct dl_phdr_info *info, size_t size, void *context) {
  (void)info, (void)size;
  ++*(int *)context;
  return 0;
}

typedef struct slot_count {
  int slots;
} slot_count;

static int count_slot(const elfhook_image *image, const elfhook_slot *slot, void *context) {
  (void)image, (void)slot;
  ((slot_count *)context)->slots++;
  return 0;
}

static int count_slots(const elfhook_image *image, void *context) {
  elfhook_enumerate_slots(image->load_bias, count_slot, context);
  return 0;
}

/* Mean microseconds of one dlopen+dlclose of `library`. */
static double dlopen_cycle_us(const char *library, int rounds) {
  double start = now_us();
  for (int i = 0; i < rounds; i++) {
    void *handle = dlopen(library, RTLD_NOW | RTLD_LOCAL);
    if (!handle) return -1;
    dlclose(handle);
  }
  return (now_us() - start) / rounds;
}

__attribute__((constructor)) static void measure(void) {
  const char *library = getenv("REBIND_BUDGET_LIBRARY") ? getenv("REBIND_BUDGET_LIBRARY") : "libelf.so.1";
  int rounds = getenv("REBIND_BUDGET_ROUNDS") ? atoi(getenv("REBIND_BUDGET_ROUNDS")) : 200;
  int images = 0;
  dl_iterate_phdr(count_image, &images);
  struct rebinding rebindings[NAME_COUNT];
  void *originals[NAME_COUNT];
  for (size_t i = 0; i < NAME_COUNT; i++) rebindings[i] = (struct rebinding){names[i], (void *)never_called, &originals[i]};

  double plain_dlopen = dlopen_cycle_us(library, rounds);

  elfhook_handle *handle;
  double t0 = now_us();
  int status = elfhook_rebind(rebindings, NAME_COUNT, NULL, &handle);
  double t1 = now_us();
  elfhook_statistics cold;
  elfhook_get_statistics(&cold);
  elfhook_unbind(handle);
  double t2 = now_us();
  elfhook_rebind(rebindings, NAME_COUNT, NULL, &handle);
  double t3 = now_us();
  elfhook_statistics warm;
  elfhook_get_statistics(&warm);
  elfhook_unbind(handle);

  /* Keep one rebinding so the engine's dlopen hook stays in place, then the same dlopen loop. */
  static void *keep_original;
  struct rebinding keep = {"rebind_budget_no_such_symbol", (void *)never_called, &keep_original};
  elfhook_rebind(&keep, 1, NULL, &handle);
  double hooked_dlopen = dlopen_cycle_us(library, rounds);
  elfhook_statistics after;
  elfhook_get_statistics(&after);
  slot_count slots = {0};
  elfhook_enumerate_images(count_slots, &slots);

  fprintf(stderr,
          "rebind-budget: images=%d import_slots=%d names=%zu status=%s\n"
          "rebind-budget: rebind_cold_us=%.1f slots_written=%llu images_parsed=%llu\n"
          "rebind-budget: undo_us=%.1f\n"
          "rebind-budget: rebind_warm_us=%.1f images_parsed_again=%llu\n"
          "rebind-budget: dlopen_dlclose_us plain=%.1f with_engine=%.1f added=%.1f (%s, %d rounds, %llu absorbed)\n",
          images, slots.slots, NAME_COUNT, elfhook_status_name(status), t1 - t0, (unsigned long long)cold.slots_written,
          (unsigned long long)cold.images_parsed, t2 - t1, t3 - t2,
          (unsigned long long)(warm.images_parsed - cold.images_parsed), plain_dlopen, hooked_dlopen,
          hooked_dlopen - plain_dlopen, library, rounds, (unsigned long long)after.dlopen_absorbed);
}
