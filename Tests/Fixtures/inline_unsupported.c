/* Where inline hooks are not implemented (aarch64), every call says so with its own status, and the
 * function is left as it is. Built by scripts/test-aarch64. */
#include "check.h"
#include "elfhook.h"

#include <string.h>

__attribute__((noipa)) int plain(int x) { return x + 1; }
static int replacement(int x) { return x; }

int main(void) {
  unsigned char before[16];
  memcpy(before, (void *)plain, sizeof before);
  void *original = NULL;
  elfhook_attachment *attachment = NULL;
  CHECK(elfhook_attach((void *)plain, (void *)replacement, &original, &attachment) ==
        ELFHOOK_ERR_UNSUPPORTED_ARCHITECTURE);
  CHECK(strstr(elfhook_last_error(), "x86_64 only") != NULL);
  CHECK(elfhook_attach_symbol(NULL, "plain", (void *)replacement, &original, &attachment) ==
        ELFHOOK_ERR_UNSUPPORTED_ARCHITECTURE);
  CHECK(elfhook_detach(attachment) == ELFHOOK_ERR_UNSUPPORTED_ARCHITECTURE);
  CHECK(attachment == NULL && original == NULL);
  CHECK(memcmp(before, (void *)plain, sizeof before) == 0 && plain(1) == 2);
  printf("inline hooks: %s\n", elfhook_status_name(ELFHOOK_ERR_UNSUPPORTED_ARCHITECTURE));
  return finish();
}
