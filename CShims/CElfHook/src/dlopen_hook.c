/* The engine's own dlopen and dlclose hooks: how images loaded later get the rebindings.
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
#include <pthread.h>
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

/* The dynamic linker's own search path (it has no RPATH or RUNPATH): LD_LIBRARY_PATH, which glibc
 * reads once at start-up, then the default directories. Computed once. */
static Dl_serinfo *shared_search_path;
static pthread_once_t shared_search_path_once = PTHREAD_ONCE_INIT;

static void compute_shared_search_path(void) {
  shared_search_path = search_path_of(link_map_at((const void *)getauxval(AT_BASE)));
}

/* How many leading entries of `caller` come from its own RPATH/RUNPATH (and LD_LIBRARY_PATH
 * between them). glibc's list ends with the default directories, and searches ld.so.cache just
 * before them; those, like LD_LIBRARY_PATH when it comes after everything the caller adds, are
 * what the real dlopen searches for any caller. They are the tail the caller's list shares with
 * the dynamic linker's own. (glibc leaves dls_flags zero, so an entry's origin cannot be read.) */
static unsigned caller_only_entries(const Dl_serinfo *caller) {
  pthread_once(&shared_search_path_once, compute_shared_search_path);
  const Dl_serinfo *shared = shared_search_path;
  unsigned own = caller->dls_cnt;
  if (!shared) return own;
  for (unsigned i = shared->dls_cnt; i > 0 && own > 0; i--, own--)
    if (strcmp(shared->dls_serpath[i - 1].dls_name, caller->dls_serpath[own - 1].dls_name) != 0) break;
  return own;
}

/* dlopen as if `caller` had called it. Only a bare name from a caller with a search path of its
 * own needs care; everything else the real dlopen resolves the same from any caller. */
static void *open_for_caller(const char *file, int mode, const void *caller) {
  if (!file || strchr(file, '/')) return eh_real_dlopen(file, mode);
  Dl_serinfo *paths = search_path_of(link_map_at(caller));
  unsigned own = paths ? caller_only_entries(paths) : 0;
  char path[PATH_MAX];
  bool found = false; /* glibc stops at the first file it finds, loadable or not */
  for (unsigned i = 0; i < own && !found; i++) {
    int length = snprintf(path, sizeof path, "%s/%s", paths->dls_serpath[i].dls_name, file);
    found = length > 0 && (size_t)length < sizeof path && is_loadable_elf(path);
  }
  free(paths);
  if (!found) return eh_real_dlopen(file, mode);
  void *loaded = eh_real_dlopen(file, RTLD_LAZY | RTLD_NOLOAD);
  if (loaded) {
    eh_real_dlclose(loaded); /* a library of that name is loaded: glibc returns it whoever asks */
    return eh_real_dlopen(file, mode);
  }
  dlerror();
  return eh_real_dlopen(path, mode);
}

/* Images unloaded by dlclose leave the registry at once, so a library mapped later at the same
 * address is never mistaken for the one that was there. */
int eh_hook_dlclose(void *handle) {
  int result = eh_real_dlclose(handle);
  if (eh_images_changed()) {
    int saved_errno = errno;
    eh_absorb_new_images();
    errno = saved_errno;
  }
  return result;
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
