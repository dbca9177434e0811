/* Inline hooks: attach a replacement to a function by patching its first instructions.
 *
 * The shape, on every architecture:
 *
 *   function:   a jump over its first instruction(s) ("displaced") to a stub near the function
 *   stub:       an indirect jump through a slot
 *   slot:       the newest replacement, in a data page beside the stub: the chain changes with one
 *               atomic pointer store, never a code write
 *   trampoline: the displaced instructions, relocated, then a jump back to the rest of the function
 *
 * This file is the part that does not depend on the architecture: the sites (one per patched
 * function, never freed: a thread may be in its trampoline at any time, and they are reused when
 * the function is attached again), the chains of attachments, the blocks that hold stubs,
 * trampolines and slots, code pages opened for writing, and the API. inline_x86_64.c and
 * inline_aarch64.c decode, relocate, place the stub and write the patch, and explain why the write
 * is safe while other threads run the function.
 *
 * Why a hand-written decoder rather than capstone or zydis: Debian's libcapstone.a linked into a
 * program adds 6.6 MB (it registers every architecture), more than the whole injected monitor; Debian
 * ships zydis only as a shared library (libzydis4.0), a dependency the hosts the monitor is injected
 * into do not have. Prologues use a small part of the instruction set, and anything outside it is
 * refused, never guessed (x86_decode.c, inline_aarch64.c). */
#include "inline_private.h"

#include <dlfcn.h>
#include <errno.h>
#include <linux/membarrier.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

eh_site *eh_inline_sites;
static eh_block **blocks;
static size_t block_count, block_capacity;
static int sync_core_state; /* 0 unknown, 1 registered, -1 unavailable */

typedef struct describe_function {
  char text[256];
} describe_function;

/* "'name' at 0x… (/path/libx.so+0x1234)" for error texts. */
static void describe(describe_function *out, const char *name, uintptr_t function, const eh_image *image) {
  char where[200] = "";
  if (image) snprintf(where, sizeof where, " (%s+0x%lx)", image->path[0] ? image->path : "?",
                      (unsigned long)(function - image->load_bias));
  if (name) snprintf(out->text, sizeof out->text, "'%s' at %p%s", name, (void *)function, where);
  else snprintf(out->text, sizeof out->text, "function %p%s", (void *)function, where);
}

/* ---- cores and pages ------------------------------------------------------------------------------ */

/* Makes every thread of the process execute a serializing instruction before it runs user code
 * again, so none keeps a stale copy of bytes just written. Where the kernel lacks the command (before
 * 4.16, or seccomp), the mprotect around the write has already sent TLB-flush IPIs to the cores
 * running this process, which serializes them too on every kernel seen. */
void eh_sync_cores(void) {
  if (sync_core_state == 0)
    sync_core_state =
        syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED_SYNC_CORE, 0, 0) == 0 ? 1 : -1;
  if (sync_core_state == 1) syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED_SYNC_CORE, 0, 0);
}

/* Makes the pages under [address, address + size) writable, keeping their exact protection. */
int eh_code_open(uintptr_t address, size_t size, eh_open_code *open, const char *what) {
  open->count = 0;
  size_t page_size = eh_page_size();
  uintptr_t first = address & ~(uintptr_t)(page_size - 1), last = (address + size - 1) & ~(uintptr_t)(page_size - 1);
  for (uintptr_t page = first; page <= last; page += page_size) {
    int prior = eh_page_protection(page);
    if (prior < 0) return prior;
    if (!(prior & PROT_WRITE) && mprotect((void *)page, page_size, prior | PROT_WRITE) != 0) {
      int error = errno;
      for (int i = 0; i < open->count; i++) mprotect((void *)open->page[i], page_size, open->prior[i]);
      return elfhook_set_error(ELFHOOK_ERR_PROTECTION, "mprotect(%p, %zu, +W) for %s: %s", (void *)page, page_size, what,
                               strerror(error));
    }
    open->page[open->count] = page;
    open->prior[open->count++] = prior;
  }
  return ELFHOOK_OK;
}

int eh_code_close(const eh_open_code *open, const char *what) {
  int status = ELFHOOK_OK;
  size_t page_size = eh_page_size();
  for (int i = 0; i < open->count; i++)
    if (!(open->prior[i] & PROT_WRITE) && mprotect((void *)open->page[i], page_size, open->prior[i]) != 0)
      status = elfhook_set_error(ELFHOOK_ERR_PROTECTION, "mprotect(%p, %zu, restore) for %s: %s",
                                 (void *)open->page[i], page_size, what, strerror(errno));
  return status;
}

/* ---- trampoline blocks ---------------------------------------------------------------------------- */

bool eh_block_bytes_free(const eh_block *block, unsigned offset, unsigned size) {
  if (offset + size > EH_CODE_AREA) return false;
  for (unsigned i = offset; i < offset + size; i++)
    if (block->used[i / 8] & (1u << (i % 8))) return false;
  return true;
}

void eh_block_mark(eh_block *block, unsigned offset, unsigned size, bool used) {
  for (unsigned i = offset; i < offset + size; i++) {
    if (used) block->used[i / 8] |= (uint8_t)(1u << (i % 8));
    else block->used[i / 8] &= (uint8_t)~(1u << (i % 8));
  }
}

eh_block *eh_block_at(uintptr_t page) {
  for (size_t i = 0; i < block_count; i++)
    if (blocks[i]->code == page) return blocks[i];
  return NULL;
}

/* Maps a new block exactly at `page` (code) and the page after it (data), or fails if anything is there. */
eh_block *eh_block_create(uintptr_t page) {
  if (block_count == block_capacity) {
    size_t grown = block_capacity ? block_capacity * 2 : 16;
    eh_block **bigger = realloc(blocks, grown * sizeof *bigger);
    if (!bigger) return NULL;
    blocks = bigger;
    block_capacity = grown;
  }
  eh_block *block = calloc(1, sizeof *block);
  if (!block) return NULL;
  size_t page_size = eh_page_size();
  void *mapped = mmap((void *)page, 2 * page_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE,
                      -1, 0);
  if (mapped == MAP_FAILED || (uintptr_t)mapped != page) {
    if (mapped != MAP_FAILED) munmap(mapped, 2 * page_size); /* a kernel before 4.17 took it as a hint */
    free(block);
    return NULL;
  }
  mprotect(mapped, page_size, PROT_READ | PROT_EXEC);
  block->code = page;
  blocks[block_count++] = block;
  return block;
}

/* Copies code into a block's page: writable (and still executable: other trampolines there may be
 * running) only for the copy. */
int eh_block_write(eh_block *block, uintptr_t address, const void *bytes, size_t size) {
  size_t page_size = eh_page_size();
  if (mprotect((void *)block->code, page_size, PROT_READ | PROT_WRITE | PROT_EXEC) != 0)
    return elfhook_set_error(ELFHOOK_ERR_PROTECTION, "mprotect(%p, %zu, RWX) of a trampoline page: %s",
                             (void *)block->code, page_size, strerror(errno));
  memcpy((void *)address, bytes, size);
  __builtin___clear_cache((char *)address, (char *)address + size);
  mprotect((void *)block->code, page_size, PROT_READ | PROT_EXEC);
  return ELFHOOK_OK;
}

bool eh_block_place(eh_block *block, unsigned size, uintptr_t *address) {
  for (unsigned offset = 0; offset + size <= EH_CODE_AREA; offset += 16) {
    if (eh_block_bytes_free(block, offset, size)) {
      eh_block_mark(block, offset, size, true);
      *address = block->code + offset;
      return true;
    }
  }
  return false;
}

void **eh_block_slot(eh_block *block) {
  if (block->slots_used >= eh_page_size() / sizeof(void *)) return NULL;
  return (void **)(block->code + eh_page_size() + block->slots_used++ * sizeof(void *));
}

eh_block *const *eh_blocks(size_t *count) {
  *count = block_count;
  return blocks;
}

size_t eh_page_size(void) {
  static size_t size;
  if (!size) size = (size_t)sysconf(_SC_PAGESIZE);
  return size;
}

void eh_hex_bytes(char *out, size_t capacity, const uint8_t *bytes, size_t count) {
  size_t used = 0;
  out[0] = '\0';
  for (size_t i = 0; i < count && used + 4 < capacity; i++)
    used += (size_t)snprintf(out + used, capacity - used, "%s%02x", i ? " " : "", bytes[i]);
}

/* ---- sites and chains ----------------------------------------------------------------------------- */

static eh_site *site_for(uintptr_t function) {
  for (eh_site *site = eh_inline_sites; site; site = site->next)
    if (site->function == function && !site->retired) return site;
  return NULL;
}

static eh_site *site_overlapping(uintptr_t function) {
  for (eh_site *site = eh_inline_sites; site; site = site->next)
    if (!site->retired && site->installed && function + EH_ARCH_PATCH_LENGTH > site->function &&
        function < site->function + site->length)
      return site;
  return NULL;
}

static const eh_image *image_containing(uintptr_t address) {
  for (size_t i = 0; i < eh_loaded_images.count; i++)
    if (eh_image_contains(eh_loaded_images.images[i], address)) return eh_loaded_images.images[i];
  return NULL;
}

/* Bytes readable from `address` on: to the end of its load segment (64 outside any image). */
static size_t readable_from(const eh_image *image, uintptr_t address) {
  if (image) {
    for (int i = 0; i < image->load_count; i++)
      if (address >= image->loads[i].start && address < image->loads[i].end) return image->loads[i].end - address;
  }
  return 64;
}

static int site_create(uintptr_t function, size_t size, const eh_image *image, const char *what, eh_site **out) {
  eh_site *site = calloc(1, sizeof *site);
  if (!site) return elfhook_set_error(ELFHOOK_ERR_NO_MEMORY, "out of memory attaching to %s", what);
  site->function = function;
  int status = eh_arch_prepare_site(site, readable_from(image, function), size, what);
  if (status != ELFHOOK_OK) {
    free(site);
    return status;
  }
  site->next = eh_inline_sites;
  __atomic_store_n(&eh_inline_sites, site, __ATOMIC_RELEASE);
  *out = site;
  return ELFHOOK_OK;
}

static void set_original(elfhook_attachment *attachment, void *original) {
  attachment->original = original;
  if (attachment->user_original) __atomic_store_n(attachment->user_original, original, __ATOMIC_RELEASE);
}

static int attach_locked(uintptr_t function, size_t size, const eh_image *image, const char *name, void *replacement,
                         void **original, elfhook_attachment **out) {
  describe_function what;
  describe(&what, name, function, image);
  eh_site *site = site_for(function);
  if (site && memcmp((const void *)function, site->installed ? site->patch : site->original,
                     site->installed ? site->patch_length : site->length) != 0) {
    /* Changed under us since it was last attached (or unloaded and loaded again at the same
     * address): decode it afresh; the old site's attachments are never written again. */
    site->retired = true;
    __atomic_store_n(&site->unloaded, site->installed, __ATOMIC_RELAXED);
    site = NULL;
  }
  if (!site) {
    eh_site *other = site_overlapping(function);
    if (other)
      return elfhook_set_error(ELFHOOK_ERR_JUMP_INTO_PATCH, "%s lies inside the patched first bytes of %p", what.text,
                               (void *)other->function);
    int status = site_create(function, size, image, what.text, &site);
    if (status != ELFHOOK_OK) return status;
  }
  int handlers = eh_arch_before_write();
  if (handlers != ELFHOOK_OK) return handlers;
  elfhook_attachment *attachment = calloc(1, sizeof *attachment);
  if (!attachment) return elfhook_set_error(ELFHOOK_ERR_NO_MEMORY, "out of memory attaching to %s", what.text);
  attachment->site = site;
  attachment->replacement = replacement;
  attachment->user_original = original;
  attachment->below = site->top;
  set_original(attachment, site->top ? site->top->replacement : (void *)site->trampoline);
  if (site->top) site->top->above = attachment;
  site->top = attachment;
  __atomic_store_n(site->slot, replacement, __ATOMIC_RELEASE);
  if (!site->installed) {
    int status = eh_arch_write_patch(site, site->patch, false, what.text);
    /* Only a failure before the write leaves the original bytes; one after it (the protection
     * could not be put back) leaves the hook in place and working, and is not undone. */
    if (status != ELFHOOK_OK && memcmp((const void *)function, site->original, site->patch_length) == 0) {
      site->top = NULL;
      __atomic_store_n(site->slot, (void *)site->trampoline, __ATOMIC_RELEASE);
      free(attachment);
      return status;
    }
    site->installed = true;
  }
  if (out) *out = attachment;
  return ELFHOOK_OK;
}

static bool is_live(const elfhook_attachment *attachment) {
  for (eh_site *site = eh_inline_sites; site; site = site->next)
    for (elfhook_attachment *a = site->top; a; a = a->below)
      if (a == attachment) return true;
  return false;
}

static int detach_locked(elfhook_attachment *attachment) {
  if (!attachment || !is_live(attachment))
    return elfhook_set_error(ELFHOOK_ERR_UNKNOWN_HANDLE, "attachment %p is not attached", (void *)attachment);
  eh_site *site = attachment->site;
  int status = ELFHOOK_OK;
  if (attachment->above) {
    /* Mend the chain: the attachment above now calls what this one called. */
    set_original(attachment->above, attachment->original);
    attachment->above->below = attachment->below;
  } else {
    site->top = attachment->below;
    if (site->top) __atomic_store_n(site->slot, site->top->replacement, __ATOMIC_RELEASE);
  }
  if (attachment->below) attachment->below->above = attachment->above;
  if (!site->top && site->unloaded) {
    site->installed = false; /* its code is gone: nothing to restore */
  } else if (!site->top) {
    describe_function what;
    describe(&what, NULL, site->function, image_containing(site->function));
    status = eh_arch_before_write();
    if (status == ELFHOOK_OK) status = eh_arch_write_patch(site, site->original, true, what.text);
    site->installed = status != ELFHOOK_OK;
    __atomic_store_n(site->slot, (void *)site->trampoline, __ATOMIC_RELEASE);
  }
  free(attachment);
  return status;
}

void eh_inline_forget_image(const eh_image *image) {
  for (eh_site *site = eh_inline_sites; site; site = site->next) {
    if (!eh_image_contains(image, site->function)) continue;
    site->retired = true;
    __atomic_store_n(&site->unloaded, true, __ATOMIC_RELAXED);
  }
}

static bool pattern_matches(const char *pattern, const char *path) {
  return !pattern || eh_image_path_matches(pattern, path);
}

/* Puts the name of `function`, when a symbol starts there, in front of the error text. Only for a
 * failed attach: dladdr walks the image's whole symbol table (2.3 M instructions in node, two
 * thirds of attaching there), and it takes the loader's lock, so never under the engine's. */
static void name_in_error(void *function) {
  Dl_info info = {0};
  if (!dladdr(function, &info) || !info.dli_sname || info.dli_saddr != function) return;
  char reason[ELFHOOK_ERROR_CAPACITY];
  snprintf(reason, sizeof reason, "%s", elfhook_last_error());
  elfhook_set_error(0, "'%s': %s", info.dli_sname, reason);
}

int elfhook_attach(void *function, void *replacement, void **original, elfhook_attachment **out) {
  elfhook_clear_error();
  if (!function || !replacement)
    return elfhook_set_error(ELFHOOK_ERR_INVALID_ARGUMENT, "elfhook_attach needs a function and a replacement");
  eh_lock();
  eh_sync_and_absorb(); /* images that could not be parsed do not stop an attach by address */
  elfhook_clear_error();
  /* In a non-PIE program `&function` of a library function is the program's canonical PLT entry:
   * patching it would catch only the calls that go through it. Attach to the function itself. */
  void *real = eh_resolve_canonical_plt(&eh_loaded_images, (uintptr_t)function);
  if (real) function = real;
  const eh_image *image = image_containing((uintptr_t)function);
  size_t size = 0;
  if (!site_for((uintptr_t)function) && image) size = eh_function_size_at(image, (uintptr_t)function);
  int status = attach_locked((uintptr_t)function, size, image, NULL, replacement, original, out);
  eh_unlock();
  if (status != ELFHOOK_OK) name_in_error(function);
  return status;
}

/* The first image matching `image_pattern` whose .dynsym or file's .symtab defines the function
 * `symbol`: ELFHOOK_OK with *image and *found; an IFUNC resolver is refused; otherwise
 * ELFHOOK_ERR_SYMBOL_NOT_FOUND, saying how many images were searched. Under the engine's lock. */
static int find_symbol_locked(const char *image_pattern, const char *symbol, const eh_image **image, eh_symbol *found) {
  size_t searched = 0;
  for (size_t i = 0; i < eh_loaded_images.count; i++) {
    const eh_image *candidate = eh_loaded_images.images[i];
    if (candidate->is_vdso || !pattern_matches(image_pattern, candidate->path)) continue;
    searched++;
    if (eh_find_function_symbol(candidate, symbol, found) != ELFHOOK_OK) continue;
    if (found->is_ifunc)
      return elfhook_set_error(ELFHOOK_ERR_INVALID_ARGUMENT,
                               "'%s' in %s is an IFUNC resolver: attach to the implementation dlsym returns", symbol,
                               candidate->path);
    *image = candidate;
    return ELFHOOK_OK;
  }
  return elfhook_set_error(ELFHOOK_ERR_SYMBOL_NOT_FOUND,
                           "symbol '%s' not found in the .dynsym or .symtab of %zu image%s matching '%s' "
                           "(a stripped file has no .symtab)", symbol, searched, searched == 1 ? "" : "s",
                           image_pattern ? image_pattern : "*");
}

int elfhook_attach_symbol(const char *image_pattern, const char *symbol, void *replacement, void **original,
                          elfhook_attachment **out) {
  elfhook_clear_error();
  if (!symbol || !replacement)
    return elfhook_set_error(ELFHOOK_ERR_INVALID_ARGUMENT, "elfhook_attach_symbol needs a symbol and a replacement");
  eh_lock();
  eh_sync_and_absorb();
  elfhook_clear_error();
  const eh_image *image = NULL;
  eh_symbol found = {0};
  int status = find_symbol_locked(image_pattern, symbol, &image, &found);
  if (status == ELFHOOK_OK) status = attach_locked(found.address, found.size, image, symbol, replacement, original, out);
  eh_unlock();
  return status;
}

int elfhook_find_function(const char *image_pattern, const char *symbol, void **address) {
  elfhook_clear_error();
  if (!symbol || !address)
    return elfhook_set_error(ELFHOOK_ERR_INVALID_ARGUMENT, "elfhook_find_function needs a symbol and an address");
  *address = NULL;
  eh_lock();
  eh_sync_and_absorb();
  elfhook_clear_error();
  const eh_image *image = NULL;
  eh_symbol found = {0};
  int status = find_symbol_locked(image_pattern, symbol, &image, &found);
  if (status == ELFHOOK_OK) *address = (void *)found.address;
  eh_unlock();
  return status;
}

int elfhook_find_functions(const char *image_pattern, const char *const *symbols, size_t count, void **addresses) {
  elfhook_clear_error();
  if ((!symbols || !addresses) && count > 0)
    return elfhook_set_error(ELFHOOK_ERR_INVALID_ARGUMENT, "elfhook_find_functions needs symbols and addresses");
  for (size_t n = 0; n < count; n++) addresses[n] = NULL;
  eh_lock();
  eh_sync_and_absorb();
  elfhook_clear_error();
  int status = ELFHOOK_ERR_SYMBOL_NOT_FOUND;
  for (size_t i = 0; i < eh_loaded_images.count && status == ELFHOOK_ERR_SYMBOL_NOT_FOUND; i++) {
    const eh_image *image = eh_loaded_images.images[i];
    if (image->is_vdso || !pattern_matches(image_pattern, image->path)) continue;
    if (eh_find_function_symbols(image, symbols, count, addresses) > 0) status = ELFHOOK_OK;
  }
  if (status == ELFHOOK_ERR_SYMBOL_NOT_FOUND)
    elfhook_set_error(status, "none of the %zu symbols is in the .dynsym or .symtab of the images matching '%s'", count,
                      image_pattern ? image_pattern : "*");
  eh_unlock();
  return status;
}

int elfhook_detach(elfhook_attachment *attachment) {
  elfhook_clear_error();
  eh_lock();
  int status = detach_locked(attachment);
  eh_unlock();
  return status;
}

