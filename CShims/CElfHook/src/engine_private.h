/* Internal declarations shared by the engine's source files. Everything here is hidden. */
#ifndef ELFHOOK_ENGINE_PRIVATE_H
#define ELFHOOK_ENGINE_PRIVATE_H

#include "elfhook.h"

#include <link.h>
#include <stdarg.h>
#include <stdbool.h>

#pragma GCC visibility push(hidden)

/* ---- errors.c: per-thread error text ---------------------------------------------------------- */

#define ELFHOOK_ERROR_CAPACITY 1024 /* bytes of a thread's error text, with its terminator */

/* Formats the thread's error text and returns `status`: `return elfhook_set_error(ELFHOOK_ERR_…, …)`. */
int elfhook_set_error(int status, const char *format, ...) __attribute__((format(printf, 2, 3)));
/* Appends to the thread's error text (reports skipped images without failing the call). */
void elfhook_append_error(const char *format, ...) __attribute__((format(printf, 1, 2)));
void elfhook_clear_error(void);

/* ---- image.c: one loaded image and its import slots, parsed from PT_DYNAMIC once ---------------- */

typedef struct eh_slot {
  void **address;
  uint32_t symbol_index;
  uint32_t name_hash;
  const char *name;
  elfhook_slot_kind kind;
  uint32_t relocation_type;
  bool in_relro;
} eh_slot;

typedef struct eh_range {
  uintptr_t start, end; /* [start, end) */
} eh_range;

#define EH_MAX_LOAD_SEGMENTS 16

typedef struct eh_image {
  char *path;
  char *loader_name;     /* dl_phdr_info.dlpi_name as glibc gave it: part of the image's identity */
  uintptr_t load_bias;
  const ElfW(Phdr) *phdr;
  ElfW(Half) phnum;
  const void *header;
  bool is_main_program, is_engine, is_vdso, is_dynamic_linker;
  bool parsed_ok;        /* false: skipped as malformed; `slots` is empty */
  bool seen;             /* mark for the registry's sweep */
  eh_range loads[EH_MAX_LOAD_SEGMENTS];
  bool load_writable[EH_MAX_LOAD_SEGMENTS]; /* PF_W: the loader left it read-write */
  int load_count;
  eh_range relro;        /* empty when there is no PT_GNU_RELRO */
  eh_range data;         /* the first writable PT_LOAD, where relocation targets normally lie */
  /* The import slots are read from the relocation tables in place, never copied: DT_JMPREL, and
   * DT_RELA past its DT_RELACOUNT relative entries (minus DT_JMPREL when it covers it). */
  const ElfW(Rela) *tables[2];
  size_t table_counts[2];
  eh_range jump_table;
  /* Name hashes of the symbols DT_GNU_HASH does not index, computed when first needed (a symbol
   * whose name begins as no wanted name does is never hashed): the hash with its low bit set, 0
   * until then. */
  uint32_t *unindexed_hashes;
  uint32_t unindexed_count;
  /* Non-PIE executables only: symbols that are undefined but have a value are canonical PLT
   * entries; other images' slots may point there, and that is not a real function. Their addresses,
   * sorted, gathered at parse: asking whether an address is one searches them, not the symbols
   * (node's 70,000, once per function attached). */
  bool has_canonical_plt;
  uintptr_t *canonical_plts;
  uint32_t canonical_plt_count;
  const ElfW(Sym) *symtab;
  uint32_t symbol_count;
  const char *strtab;
  size_t strsz;
  /* DT_GNU_HASH keeps the hash of every symbol it indexes: slots of those symbols are matched
   * without reading their names (the names are what makes a first scan slow). */
  const uint32_t *gnu_chains;
  uint32_t gnu_symbol_offset;
  /* Symbol versions, looked up only for the slots that are rebound or listed. */
  const ElfW(Half) *versym;
  const ElfW(Verneed) *verneed;
  size_t verneednum;
  const ElfW(Verdef) *verdef;
  size_t verdefnum;
} eh_image;

/* Builds the image from a dl_iterate_phdr record. Returns NULL only when out of memory; a malformed
 * image comes back with parsed_ok false and the reason appended to the thread's error text. */
eh_image *eh_image_create(const struct dl_phdr_info *info, const void *engine_address);
void eh_image_destroy(eh_image *image);
bool eh_image_contains(const eh_image *image, uintptr_t address);
/* Whether an image's path, or its base name, matches the fnmatch(3) pattern `pattern`. */
bool eh_image_path_matches(const char *pattern, const char *path);
/* True when `address` is a canonical PLT entry of this (non-PIE) executable. */
bool eh_image_is_canonical_plt(const eh_image *image, uintptr_t address);
/* The GNU hash of a name (the function DT_GNU_HASH uses), low bit cleared as the table stores it. */
uint32_t eh_hash_name(const char *name);
/* The names a scan of slots looks for: a 1024-bit filter of their hashes, and a 4096-bit filter of
 * their first two bytes (`eh_name_filter_add`), which rejects most names before they are hashed. */
typedef struct eh_name_filter {
  uint64_t hashes[16];
  uint64_t prefixes[64];
} eh_name_filter;
void eh_name_filter_add(eh_name_filter *filter, const char *name, uint32_t hash);
/* Whether the image has relocations that may fill import slots (it may still have no slot). */
bool eh_image_has_slot_tables(const eh_image *image);
/* Calls `callback` for each import slot whose name passes `filter` (NULL passes every slot), until
 * it returns false. A relocation is checked when it is offered: one whose target is misaligned or
 * outside the image's load segments is never offered (the loader would have crashed writing it). */
typedef bool (*eh_slot_callback)(const eh_image *image, const eh_slot *slot, void *context);
void eh_image_each_slot(const eh_image *image, const eh_name_filter *filter, eh_slot_callback callback,
                        void *context);
/* The version of a slot's symbol ("GLIBC_2.2.5"), or NULL when unversioned. */
const char *eh_slot_version(const eh_image *image, const eh_slot *slot);
void eh_image_public_view(const eh_image *image, elfhook_image *view);

/* ---- registry.c: the images loaded now, synced with dl_iterate_phdr ---------------------------- */

typedef struct eh_registry {
  eh_image **images;
  size_t count, capacity;
  unsigned long long adds, subs; /* glibc's dlpi_adds / dlpi_subs at the last sync */
  bool synced_once;
} eh_registry;

/* Brings the registry up to date; new images are parsed, vanished ones dropped (their slots are
 * forgotten by the hook sets via eh_forget_range). Returns the number of new images; their
 * pointers are in `fresh` (malloc'd, caller frees) when `fresh` is not NULL. Negative on ENOMEM. */
long eh_registry_sync(eh_registry *registry, eh_image ***fresh);
eh_image *eh_registry_find_bias(eh_registry *registry, uintptr_t load_bias);
/* Called by the registry when an image vanished, before it is freed. */
void eh_forget_image(const eh_image *image);

/* ---- slot_write.c: atomic stores into GOT slots, through RELRO ---------------------------------- */

#define EH_MAX_OPEN_PAGES 32

/* The page protections of the process, read from /proc/self/maps at most once per batch of writes
 * and only when a write meets a page the loader left read-only; and the runs of pages made
 * writable for the batch, each opened once however many of its slots are written. */
typedef struct eh_protection_map {
  struct eh_mapping { uintptr_t start, end; int protection; } *mappings;
  size_t count;
  bool loaded;
  struct eh_open_pages { uintptr_t start, end; int prior; const char *path; } open[EH_MAX_OPEN_PAGES];
  size_t open_count;
} eh_protection_map;

/* Makes writable, before a batch stores into `count` slots of `image`, the read-only pages that
 * hold them: each run of adjacent pages with the same protection in one mprotect (and one more to
 * put it back), where a page at a time split and merged the mapping twice a page (~7 µs a page
 * here: 38 pages in a curl's first rebinding). Pages it cannot take (more than it has room for)
 * are left to eh_slot_store. */
int eh_protection_open(eh_protection_map *map, const eh_image *image, void **const *slots,
                       const char *const *symbols, size_t count);
/* Stores `value` in `slot` of `image` with one atomic pointer store: directly when the loader left
 * the page writable or a run holding it is open, otherwise after making the page writable (it
 * stays so until eh_protection_restore, which the caller runs before it leaves the image's
 * dl_iterate_phdr callback). */
int eh_slot_store(eh_protection_map *map, const eh_image *image, void **slot, void *value,
                  const char *symbol);
/* Puts back the exact prior protection of every run of pages opened. */
int eh_protection_restore(eh_protection_map *map);
void eh_protection_map_free(eh_protection_map *map);

/* ---- original.c: what a slot really calls --------------------------------------------------------- */

/* The importer whose scope the last look-up opened (dlopen RTLD_NOLOAD, which compares the path
 * with every loaded image's names: ~10,000 instructions a look-up in curl), kept open for the next
 * slot of the same image. Zeroed to start; released by its owner when its pass is over. */
typedef struct eh_scope_cache {
  const eh_image *image;
  void *handle;
} eh_scope_cache;
void eh_scope_cache_release(eh_scope_cache *scopes);

/* The function a call through `slot` reaches, never a lazy-binding stub or canonical PLT entry.
 * NULL (with error text) when it cannot be resolved. */
void *eh_resolve_original(eh_registry *registry, const eh_image *image, const eh_slot *slot,
                          void *value, eh_scope_cache *scopes);

/* The function a non-PIE executable's canonical PLT entry at `address` stands for (what `&function`
 * gives in such a program), or NULL when `address` is no canonical PLT entry. */
void *eh_resolve_canonical_plt(eh_registry *registry, uintptr_t address);

/* ---- rebind.c / dlopen_hook.c: images loaded later ---------------------------------------------- */

/* The real dlopen: dlopen itself until the engine's own dlopen hook is installed, then the
 * original that hook replaced. The engine never calls dlopen through its own image's GOT. */
extern void *(*eh_real_dlopen)(const char *, int);
extern int (*eh_real_dlclose)(void *);
/* True when `value` is the replacement of a live rebinding (a chain link, always callable). */
bool eh_is_hook_replacement(void *value);
/* Brings the registry up to date and patches images that appeared since the last look (called
 * after every hooked dlopen and dlclose). */
void eh_absorb_new_images(void);
/* Whether glibc's load counters moved since the engine last looked: a cheap hint, no lock. */
bool eh_images_changed(void);

/* ---- rebind.c: the engine's state, shared with enumerate.c (both under the engine lock) ------- */

extern eh_registry eh_loaded_images;
extern elfhook_statistics eh_statistics;
/* Brings the registry up to date and gives new images the rebindings that follow them. */
int eh_sync_and_absorb(void);

/* ---- lock.c ---------------------------------------------------------------------------------------- */
void eh_lock(void);
void eh_unlock(void);


/* ---- x86_decode.c: instruction lengths for relocating a prologue (x86_64 only) ------------------- */

typedef enum eh_x86_kind {
  EH_X86_PLAIN = 0,     /* copied as it is (after fixing a RIP-relative displacement, if any) */
  EH_X86_JMP,           /* EB rel8, E9 rel32 */
  EH_X86_JCC,           /* 7x rel8, 0F 8x rel32 */
  EH_X86_CALL,          /* E8 rel32 */
  EH_X86_RET,           /* C3, C2 imm16 */
  EH_X86_INDIRECT_JMP,  /* FF /4, FF /5 */
  EH_X86_INDIRECT_CALL, /* FF /2, FF /3 */
} eh_x86_kind;

typedef struct eh_x86_insn {
  uint8_t length;
  uint8_t opcode, opcode2;  /* opcode2: the second byte after 0F */
  eh_x86_kind kind;
  uint8_t condition;        /* jcc: the low nibble of the opcode */
  int8_t branch_offset;     /* where the rel8/rel32 sits */
  uint8_t branch_size;      /* 1 or 4; 0 when not a relative branch */
  int8_t rip_disp_offset;   /* where a RIP-relative disp32 sits, or -1 */
  uintptr_t target;         /* a relative branch's or RIP-relative operand's absolute address */
} eh_x86_insn;

/* Decodes the instruction at `code` (at most `available` bytes readable). Returns its length, or
 * -1 when the decoder does not know it (the caller refuses to relocate it). */
int eh_x86_decode(const uint8_t *code, size_t available, eh_x86_insn *insn);

/* ---- symbol_file.c: a symbol from an image's .dynsym or, read from its file, .symtab ------------- */

typedef struct eh_symbol {
  uintptr_t address; /* load bias applied */
  size_t size;       /* st_size; 0 when unknown */
  bool from_symtab;  /* found in the file's .symtab, not the loaded .dynsym */
  bool is_ifunc;
  bool is_local;
} eh_symbol;

/* Looks `name` up in the image's .dynsym, then in its file's .symtab (mapped read-only, every
 * offset checked against the file's size). Functions only (STT_FUNC, STT_GNU_IFUNC), defined.
 * Returns ELFHOOK_OK, ELFHOOK_ERR_SYMBOL_NOT_FOUND (no error text set: the caller says it). */
int eh_find_function_symbol(const eh_image *image, const char *name, eh_symbol *symbol);
/* Looks `count` names up at once: one pass over the image's .dynsym, and, for those not found
 * there, one over its file's .symtab. Functions only, IFUNC resolvers left out. `addresses[i]`
 * gets names[i]'s address or NULL; returns how many were found. */
size_t eh_find_function_symbols(const eh_image *image, const char *const *names, size_t count, void **addresses);
/* The size of the function that starts exactly at `address`, from .dynsym/.symtab; 0 if unknown. */
size_t eh_function_size_at(const eh_image *image, uintptr_t address);

/* Checks whether the function whose first bytes are at `code` (`available` of them readable, `size`
 * its symbol's or 0) could be attached: the decoding and refusals of eh_arch_prepare_site, nothing
 * placed or written. ELFHOOK_OK, or the refusal's status and error text. (inline_x86_64.c,
 * inline_aarch64.c) */
int eh_arch_check_prologue(const uint8_t *code, size_t available, size_t size, const char *what);

/* ---- inline_hook.c ------------------------------------------------------------------------------- */

/* An image was unloaded: the inline hooks on its functions are forgotten (never written again). */
void eh_inline_forget_image(const eh_image *image);

/* ---- slot_write.c, for code pages ------------------------------------------------------------------ */

/* The protection the page holding `address` has now, from /proc/self/maps; -1 with error text. */
int eh_page_protection(uintptr_t address);
/* Reads every mapping of the process (sorted by address, as /proc/self/maps lists them). */
int eh_protection_map_load(eh_protection_map *map);

#pragma GCC visibility pop

#endif
