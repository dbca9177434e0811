/* The constructor of libElfHookPreload.so: runs when LD_PRELOAD loads it, before the host's main.
 * It reads ELFHOOK_*, says in one line what is wrong with them, and arms the forwarders; it loads
 * nothing and patches nothing (elfhook_preload.h). */
#include "elfhook_preload.h"

#include <errno.h>

__attribute__((constructor)) static void elfhook_preload_constructor(void) {
  int saved_errno = errno;
  elfhook_preload_configuration configuration;
  char problem[512];
  switch (elfhook_read_configuration(&configuration, problem, sizeof problem)) {
  case ELFHOOK_INVALID:
    if (configuration.log != ELFHOOK_LOG_OFF) elfhook_say_unmonitored("%s", problem);
    break;
  case ELFHOOK_DISABLED:
    break;
  case ELFHOOK_CONFIGURED:
    if (elfhook_locate_monitor(configuration.log)) elfhook_arm(&configuration);
    break;
  }
  errno = saved_errno;
}
