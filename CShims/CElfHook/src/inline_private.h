/* Inline hooks: what the architecture-neutral part (inline_hook.c: sites, chains, trampoline blocks,
 * the API) shares with each architecture's part (inline_x86_64.c, inline_aarch64.c: decoding,
 * relocating, placing the stub, writing the patch). Hidden, like everything internal. */
#ifndef ELFHOOK_INLINE_PRIVATE_H
#define ELFHOOK_INLINE_PRIVATE_H

#include "engine_private.h"

#pragma GCC visibility push(hidden)

#define EH_MAX_DISPLACED 8
#define EH_MAX_PATCH 16
#define EH_CODE_AREA 4096u        /* bytes of a block's code page used for stubs and trampolines */
#define EH_TRAMPOLINE_CAPACITY 160
#if defined(__x86_64__)
#define EH_ARCH_PATCH_LENGTH 5 /* jmp rel32 */
#else
#define EH_ARCH_PATCH_LENGTH 4 /* b imm26 */
#endif

struct elfhook_attachment {
  struct eh_site *site;
  void *replacement;
  void **user_original;
  void *original;                    /* what this attachment's `original` calls */
  elfhook_attachment *below, *above; /* in the site's chain; the top is the newest */
};

/* One patched (or once patched) function. Never freed: the x86_64 trap handlers read the list
 * without a lock, and threads may still be in its trampoline. */
typedef struct eh_site {
  struct eh_site *next;
  uintptr_t function;
  uint8_t length;                          /* bytes displaced: whole instructions, >= patch_length */
  uint8_t original[EH_MAX_PATCH];          /* the function's first `length` bytes as they were */
  uint8_t patch[EH_MAX_PATCH];             /* what the first patch_length bytes become */
  uint8_t patch_length;
  uint8_t count;                           /* displaced instructions */
  uint8_t boundaries[EH_MAX_DISPLACED];    /* their offsets in the function */
  uint16_t moved_to[EH_MAX_DISPLACED];     /* their offsets in the trampoline */
  uint8_t *trampoline;
  void **slot;                             /* the stub jumps through it: the newest replacement */
  elfhook_attachment *top;
  bool installed;
  bool retired;                            /* its function's bytes changed; a new site replaced it */
  bool unloaded;                           /* its image was unloaded: never written again */
} eh_site;

/* Newest first; published with release stores. */
extern eh_site *eh_inline_sites;

/* ---- trampoline blocks (inline_hook.c) -----------------------------------------------------------
 * A block is a code page (stubs and trampolines, read-execute) and the data page after it (the
 * slots), mapped together at an address the architecture chose near the functions it serves. */

typedef struct eh_block {
  uintptr_t code;
  uint8_t used[EH_CODE_AREA / 8];
  unsigned slots_used;
} eh_block;

size_t eh_page_size(void);
eh_block *eh_block_at(uintptr_t page);
/* Maps a block exactly at `page`; NULL when anything is mapped there. */
eh_block *eh_block_create(uintptr_t page);
bool eh_block_bytes_free(const eh_block *block, unsigned offset, unsigned size);
void eh_block_mark(eh_block *block, unsigned offset, unsigned size, bool used);
/* First fit for `size` bytes aligned to 16; marks them. */
bool eh_block_place(eh_block *block, unsigned size, uintptr_t *address);
/* A free slot of the block's data page, or NULL. */
void **eh_block_slot(eh_block *block);
/* Copies code into the block's code page (writable, still executable, only for the copy). */
int eh_block_write(eh_block *block, uintptr_t address, const void *bytes, size_t size);
/* Every block, for an architecture's search of one within reach. */
eh_block *const *eh_blocks(size_t *count);

/* ---- code pages (inline_hook.c) ------------------------------------------------------------------- */

typedef struct eh_open_code {
  uintptr_t page[2];
  int prior[2];
  int count;
} eh_open_code;

/* Makes the pages under [address, address + size) writable, keeping their exact protection. */
int eh_code_open(uintptr_t address, size_t size, eh_open_code *open, const char *what);
int eh_code_close(const eh_open_code *open, const char *what);
/* Every thread of the process runs a context-synchronizing instruction before it runs user code
 * again (membarrier SYNC_CORE, where the kernel has it). */
void eh_sync_cores(void);

/* Bytes as "8d 04 37 c3" for error texts. */
void eh_hex_bytes(char *out, size_t capacity, const uint8_t *bytes, size_t count);

/* ---- what each architecture provides (inline_x86_64.c, inline_aarch64.c) ------------------------- */

/* Decodes the instructions the patch displaces (refusing what cannot move: `readable` bytes may be
 * read from the function, `size` is the symbol's or 0), places the stub and trampoline, writes
 * them, and fills the site's patch. The function itself is not written. */
int eh_arch_prepare_site(eh_site *site, size_t readable, size_t size, const char *what);
/* Writes `bytes` (site->patch_length of them) over the function's first bytes, safely for running
 * threads: the patch, or the original bytes when `restoring`. */
int eh_arch_write_patch(const eh_site *site, const uint8_t *bytes, bool restoring, const char *what);
/* Called before every patch write (x86_64 puts its trap handlers back in front). */
int eh_arch_before_write(void);

#pragma GCC visibility pop

#endif
