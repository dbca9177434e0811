/* Prints the file libloader's bare-name dlopen loaded; with argv[1] "hook" after a rebinding is
 * in place (which puts the engine's dlopen hook between libloader and the dynamic linker). */
#include "elfhook.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

const char *loader_open(const char *name);

static pid_t (*original_getpid)(void);
static pid_t hook_getpid(void) { return original_getpid(); }

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "hook") == 0) {
    struct rebinding rebinding = {"getpid", (void *)hook_getpid, (void **)&original_getpid};
    if (rebind_symbols(&rebinding, 1) != 0) {
      fprintf(stderr, "rebind_symbols: %s\n", elfhook_last_error());
      return 1;
    }
  }
  printf("%s\n", loader_open("libbare.so"));
  return 0;
}
