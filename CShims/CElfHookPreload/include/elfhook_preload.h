/* elfhook_preload.h — the injected library's entry, run by its ELF constructor. */
#ifndef ELFHOOK_PRELOAD_H
#define ELFHOOK_PRELOAD_H

/* Defined in Swift (ElfHookPreload, @_cdecl): reads ELFHOOK_* and starts the monitor. */
void elfhook_preload_start(void);

#endif
