/* Example: log every fopen the program (and every library it loads) makes, then let it proceed.
 *
 *   cc fopen_audit.c -I../../CShims/CElfHook/include -L<dir of libCElfHook.so> -lCElfHook \
 *      -Wl,-rpath,<that dir> -o fopen_audit
 *   ./fopen_audit /etc/hostname
 *
 * The hook calls the real fopen through the pointer rebind_symbols handed back, and keeps errno
 * exactly as the real fopen left it. */
#include "elfhook.h"

#include <errno.h>
#include <stdio.h>

static FILE *(*real_fopen)(const char *, const char *);
static int opened;

static FILE *audited_fopen(const char *path, const char *mode) {
  FILE *file = real_fopen(path, mode);
  int saved_errno = errno;
  opened++;
  fprintf(stderr, "fopen(\"%s\", \"%s\") -> %s\n", path, mode, file ? "ok" : "failed");
  errno = saved_errno;
  return file;
}

int main(int argc, char **argv) {
  struct rebinding rebinding = {"fopen", (void *)audited_fopen, (void **)&real_fopen};
  if (rebind_symbols(&rebinding, 1) != 0) {
    fprintf(stderr, "rebind_symbols: %s\n", elfhook_last_error());
    return 1;
  }
  for (int i = 1; i < argc; i++) {
    FILE *file = fopen(argv[i], "r");
    if (file) {
      char line[256];
      if (fgets(line, sizeof line, file)) printf("%s: %s", argv[i], line);
      fclose(file);
    } else {
      perror(argv[i]);
    }
  }
  printf("%d fopen calls seen\n", opened);
  return 0;
}
