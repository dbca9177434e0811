/* libloader.so, built with a RUNPATH ($ORIGIN/private): dlopen's a library by bare name that only
 * its own RUNPATH finds, and reports which file was loaded. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <stddef.h>

const char *loader_open(const char *name) {
  void *handle = dlopen(name, RTLD_NOW);
  if (!handle) return dlerror();
  struct link_map *map = NULL;
  dlinfo(handle, RTLD_DI_LINKMAP, &map);
  return map ? map->l_name : "(no link map)";
}
