/* The constructor of libElfHookPreload.so: runs when LD_PRELOAD loads it, before the host's main. */
#include "elfhook_preload.h"

__attribute__((constructor)) static void elfhook_preload_constructor(void) { elfhook_preload_start(); }
