/* How many of a file's exported functions an inline hook could attach to (scripts/bench-inline):
 *   nm -D --defined-only FILE | … | attachable FILE   (function names on stdin, one a line)
 * Runs elfhook_inspect_function on each (the attach's decoding and refusals, on the file), skips
 * IFUNC resolvers, and prints the count and, per refusal status, how many and one example. */
#include "elfhook.h"

#include <stdio.h>
#include <string.h>

#define STATUSES 16

int main(int argc, char **argv) {
  if (argc < 2) return 2;
  char name[512];
  long attachable = 0, total = 0, refused[STATUSES] = {0};
  char example[STATUSES][300] = {{0}};
  while (fgets(name, sizeof name, stdin)) {
    name[strcspn(name, "\n")] = '\0';
    elfhook_function_info info;
    if (elfhook_inspect_function(argv[1], name, &info) != 0 || info.is_ifunc) continue;
    total++;
    if (info.attachable == 0) {
      attachable++;
    } else if (-info.attachable < STATUSES) {
      refused[-info.attachable]++;
      if (!example[-info.attachable][0]) snprintf(example[-info.attachable], sizeof example[0], "%s", info.reason);
    }
  }
  printf("%s: %ld of %ld exported functions attachable (%.1f%%)\n", argv[1], attachable, total,
         total ? 100.0 * (double)attachable / (double)total : 0.0);
  for (int status = 0; status < STATUSES; status++)
    if (refused[status])
      printf("  %s: %ld, e.g. %s\n", elfhook_status_name(-status), refused[status], example[status]);
  return 0;
}
