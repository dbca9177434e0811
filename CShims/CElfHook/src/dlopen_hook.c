/* The engine's own dlopen hook: how images loaded later get the rebindings.
 *
 * After the real dlopen returns, images that appeared (the library and every dependency it pulled
 * in) are parsed and given every rebinding that follows new images.
 *
 * The pitfall it must not fall into: glibc resolves a bare name ("libplugin.so") with the search
 * path of dlopen's *caller* (its DT_RPATH/DT_RUNPATH, $ORIGIN expanded). Once this hook sits in
 * between, the caller glibc sees is the engine, and a library that only the real caller's RUNPATH
 * finds would fail to load, or a different file would load. So for a bare name the hook searches
 * the real caller's own part of the search path itself, in glibc's order (RPATH, LD_LIBRARY_PATH,
 * RUNPATH, as dlinfo(RTLD_DI_SERINFO) lists them) and opens the file it finds by its full path. Names already loaded, and names only the cache or the default
 * directories find, go to the real dlopen unchanged. */
#include "engine_private.h"

#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

#if defined(__x86_64__)
#define EH_MACHINE EM_X86_64
#elif defined(__aarch64__)
#define EH_MACHINE EM_AARCH64
#endif

/* glibc skips files of another class or machine and goes on searching; so do we. */
static bool is_loadable_elf(const char *path) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  ElfW(Ehdr) header;
  bool loadable = read(fd, &header, sizeof header) == (ssize_t)sizeof header &&
                  memcmp(header.e_ident, ELFMAG, SELFMAG) == 0 && header.e_ident[EI_CLASS] == ELFCLASS64 &&
                  header.e_machine == EH_MACHINE;
  close(fd);
  return loadable;
}

/* The directories glibc would search for a bare name on behalf of `map`, in order. */
static Dl_serinfo *search_path_of(struct link_map *map) {
  Dl_serinfo size_probe;
  if (!map || dlinfo(map, RTLD_DI_SERINFOSIZE, &size_probe) != 0) return NULL;
  Dl_serinfo *paths = malloc(size_probe.dls_size);
  if (!paths) return NULL;
  paths->dls_size = size_probe.dls_size;
  paths->dls_cnt = size_probe.dls_cnt;
  if (dlinfo(map, RTLD_DI_SERINFO, paths) == 0) return paths;
  free(paths);
  return NULL;
}

static struct link_map *link_map_at(const void *address) {
  Dl_info info;
  struct link_map *map = NULL;
  if (!dladdr1(address, &info, (void **)&map, RTLD_DL_LINKMAP)) return NULL;
  return map;
}

/* How many leading entries of `caller` come from its own RPATH/RUNPATH (and LD_LIBRARY_PATH
 * between them). glibc's list ends with the default directories, and searches ld.so.cache just
 * before them; those, like LD_LIBRARY_PATH when it comes after everything the caller adds, are
 * what the real dlopen searches for any caller. They are the tail the caller's list shares with
 * the dynamic linker's own (it has no RPATH or RUNPATH). glibc leaves dls_flags zero, so the
 * origin of an entry cannot be read from it. */
static unsigned caller_only_entries(const Dl_serinfo *caller) {
  Dl_serinfo *shared = search_path_of(link_map_at((const void *)getauxval(AT_BASE)));
  unsigned own = caller->dls_cnt;
  if (!shared) return own;
  for (unsigned i = shared->dls_cnt; i > 0 && own > 0; i--, own--)
    if (strcmp(shared->dls_serpath[i - 1].dls_name, caller->dls_serpath[own - 1].dls_name) != 0) break;
  free(shared);
  return own;
}

/* The file the caller's own search path finds for `name`, or false when only the directories every
 * caller shares would (then the real dlopen finds the same file from any caller). */
static bool find_in_caller_path(const char *name, const void *caller, char *found, size_t capacity) {
  Dl_serinfo *paths = search_path_of(link_map_at(caller));
  if (!paths) return false;
  bool hit = false;
  unsigned own = caller_only_entries(paths);
  for (unsigned i = 0; i < own && !hit; i++) {
    int length = snprintf(found, capacity, "%s/%s", paths->dls_serpath[i].dls_name, name);
    hit = length > 0 && (size_t)length < capacity && is_loadable_elf(found);
  }
  free(paths);
  return hit;
}

/* dlopen as if `caller` had called it. */
static void *open_for_caller(const char *file, int mode, const void *caller) {
  if (!file || strchr(file, '/')) return eh_real_dlopen(file, mode);
  void *loaded = eh_real_dlopen(file, RTLD_LAZY | RTLD_NOLOAD);
  if (loaded) {
    dlclose(loaded); /* already loaded: glibc matches it by name whoever asks */
    return eh_real_dlopen(file, mode);
  }
  dlerror();
  char path[PATH_MAX];
  if (find_in_caller_path(file, caller, path, sizeof path)) return eh_real_dlopen(path, mode);
  return eh_real_dlopen(file, mode);
}

void *eh_hook_dlopen(const char *file, int mode) {
  void *handle = open_for_caller(file, mode, __builtin_return_address(0));
  /* A failed dlopen leaves nothing new loaded, and its dlerror() text must reach the caller. */
  if (handle && eh_images_changed()) {
    int saved_errno = errno;
    eh_absorb_new_images();
    dlerror();
    errno = saved_errno;
  }
  return handle;
}
