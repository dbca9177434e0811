/*
 * elfhook.h — rebind symbols in the GOT of loaded ELF images: fishhook for Linux.
 *
 * A call from an ELF image to a function in another image goes through a pointer in the caller's
 * Global Offset Table: an R_*_JUMP_SLOT slot (PLT calls, the counterpart of Mach-O's lazy symbol
 * pointers) or an R_*_GLOB_DAT slot (address-taken and -fno-plt calls, the counterpart of non-lazy
 * pointers). Rebinding a symbol writes a new function into those slots and hands back the function
 * they held, so the replacement can call through.
 *
 * The first part of this header is fishhook's API with fishhook's meaning. The second part is what
 * fishhook lacks: undo, image filters, enumeration, status codes and per-thread error text.
 *
 * Thread safety: every function here may be called from any thread. Rebinding, undo and the
 * absorption of images loaded later share one lock; slot writes are atomic pointer stores, so a
 * concurrent caller always reaches either the old or the new function.
 */
#ifndef ELFHOOK_H
#define ELFHOOK_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define ELFHOOK_EXPORT __attribute__((visibility("default")))

/* ---------------------------------------------------------------------------------------------
 * fishhook-compatible API
 * ------------------------------------------------------------------------------------------- */

/*
 * One symbol to rebind: every GOT slot bound to `name` is pointed at `replacement`. When `replaced`
 * is not NULL it receives the function the slots held before — the real implementation, or an
 * earlier rebinding of the same name (rebindings chain). It is never a lazy-binding PLT stub.
 */
struct rebinding {
  const char *name;
  void *replacement;
  void **replaced;
};

/*
 * Rebinds the given symbols in every loaded image, and in every image loaded later (including the
 * dependencies a dlopen pulls in). Later calls take precedence over earlier ones for the same name.
 * The engine's own shared object, the dynamic linker and the vDSO are never patched.
 * Returns 0 (ELFHOOK_OK) on success, or a negative elfhook_status; elfhook_last_error() says why.
 * Images that cannot be parsed are skipped without failing the call.
 */
ELFHOOK_EXPORT int rebind_symbols(struct rebinding rebindings[], size_t rebindings_nel);

/*
 * Rebinds the given symbols in one image only: `header` is its ELF header in memory (dladdr's
 * dli_fbase; any address inside the image is accepted) and `slide` its load bias
 * (dl_phdr_info.dlpi_addr, link_map.l_addr). Images loaded later are not affected.
 * Returns 0 or a negative elfhook_status (ELFHOOK_ERR_IMAGE_NOT_FOUND when no loaded image matches).
 */
ELFHOOK_EXPORT int rebind_symbols_image(void *header, intptr_t slide,
                                        struct rebinding rebindings[], size_t rebindings_nel);

/* ---------------------------------------------------------------------------------------------
 * Beyond fishhook
 * ------------------------------------------------------------------------------------------- */

/* What a call returns: 0 on success, one of these negative values when it failed. */
typedef enum elfhook_status {
  ELFHOOK_OK = 0,
  ELFHOOK_ERR_INVALID_ARGUMENT = -1, /* NULL array, NULL name or replacement, unknown flag */
  ELFHOOK_ERR_NO_MEMORY = -2,        /* malloc failed */
  ELFHOOK_ERR_IMAGE_NOT_FOUND = -3,  /* no loaded image has this header and load bias */
  ELFHOOK_ERR_MALFORMED_IMAGE = -4,  /* the image's dynamic section is inconsistent */
  ELFHOOK_ERR_PROTECTION = -5,       /* mprotect of a RELRO page failed */
  ELFHOOK_ERR_UNRESOLVED = -6,       /* the original of a lazy slot could not be resolved */
  ELFHOOK_ERR_UNKNOWN_HANDLE = -7,   /* the handle or attachment was already removed */
  /* Inline hooks (elfhook_attach): the function is left byte-for-byte unchanged after these. */
  ELFHOOK_ERR_SYMBOL_NOT_FOUND = -8,      /* no matching image defines the function (stripped?) */
  ELFHOOK_ERR_UNKNOWN_INSTRUCTION = -9,   /* the prologue holds an instruction the decoder does not
                                             know or cannot move (AVX, syscall, loop, int3…) */
  ELFHOOK_ERR_FUNCTION_TOO_SHORT = -10,   /* the function ends before the 5 bytes the patch needs */
  ELFHOOK_ERR_JUMP_INTO_PATCH = -11,      /* a displaced instruction jumps back into the patched bytes */
  ELFHOOK_ERR_OUT_OF_RANGE = -12,         /* no trampoline could be placed where the patch's jump and
                                             the moved PC-relative operands reach (x86_64 ±2 GB,
                                             aarch64 ±128 MB) */
} elfhook_status;

/* A readable name for a status: "ELFHOOK_ERR_PROTECTION". Never NULL. */
ELFHOOK_EXPORT const char *elfhook_status_name(int status);

/*
 * The text of the last failure on the calling thread: names the symbol, image, ELF tag or errno that
 * failed ("mprotect(0x7f…, 4096, RW) for 'connect' in /usr/lib/…/libcurl.so.4: Permission denied").
 * Also says which images were skipped as malformed. Empty when the thread's last call succeeded.
 */
ELFHOOK_EXPORT const char *elfhook_last_error(void);

/* A loaded image, as the engine sees it. Valid during the callback that receives it. */
typedef struct elfhook_image {
  const char *path;     /* absolute path; the main program's path is resolved from /proc/self/exe */
  uintptr_t load_bias;  /* dl_phdr_info.dlpi_addr */
  const void *header;   /* the ELF header in memory */
  int is_main_program;  /* the executable the process started with */
  int is_engine;        /* the image that contains this engine */
} elfhook_image;

/* Relocation kinds of an import slot, independent of the architecture's numbering. */
typedef enum elfhook_slot_kind {
  ELFHOOK_SLOT_JUMP_SLOT = 1, /* R_X86_64_JUMP_SLOT, R_AARCH64_JUMP_SLOT: PLT calls */
  ELFHOOK_SLOT_GLOB_DAT = 2,  /* R_X86_64_GLOB_DAT, R_AARCH64_GLOB_DAT: GOT loads, -fno-plt */
  ELFHOOK_SLOT_ABS64 = 3,     /* R_X86_64_64, R_AARCH64_ABS64 with addend 0: function pointers in data;
                                 rebound only in RELRO (writable data holds program variables) */
} elfhook_slot_kind;

/* One import slot of a loaded image. */
typedef struct elfhook_slot {
  const char *symbol;      /* the symbol name */
  const char *version;     /* "GLIBC_2.2.5", or NULL when unversioned */
  elfhook_slot_kind kind;
  unsigned relocation_type; /* the architecture's number: R_X86_64_JUMP_SLOT is 7 */
  void **address;           /* where the pointer lives */
  void *value;              /* what it points at now */
  int in_relro;             /* inside PT_GNU_RELRO: read-only after start-up, mprotect to write */
} elfhook_slot;

/* Return nonzero from a visitor to stop the enumeration. */
typedef int (*elfhook_image_visitor)(const elfhook_image *image, void *context);
typedef int (*elfhook_slot_visitor)(const elfhook_image *image, const elfhook_slot *slot,
                                    void *context);

/*
 * Calls `visitor` for every loaded image in link-map order. Visitors must not call back into the
 * engine's rebinding functions. Returns 0 or a negative elfhook_status.
 */
ELFHOOK_EXPORT int elfhook_enumerate_images(elfhook_image_visitor visitor, void *context);

/*
 * Calls `visitor` for every import slot (JUMP_SLOT, GLOB_DAT, and ABS64 data pointers to
 * functions) of the image whose load bias is `load_bias`. Returns ELFHOOK_ERR_IMAGE_NOT_FOUND when
 * no image has that bias, ELFHOOK_ERR_MALFORMED_IMAGE when it could not be parsed.
 */
ELFHOOK_EXPORT int elfhook_enumerate_slots(uintptr_t load_bias, elfhook_slot_visitor visitor,
                                           void *context);

/* Decides whether an image is patched: return nonzero to patch it. */
typedef int (*elfhook_image_filter)(const elfhook_image *image, void *context);

enum {
  /* Patch only the images loaded now; not the ones loaded later. */
  ELFHOOK_CURRENT_IMAGES_ONLY = 1u << 0,
};

/*
 * Which images a rebinding applies to. Patterns are fnmatch(3) patterns matched against both the
 * image's full path and its file name ("libssl.so*", "/usr/lib/x86_64-linux-gnu/…"). A NULL list means no
 * restriction. The filter function, when set, is asked last.
 */
typedef struct elfhook_options {
  const char *const *only_images;   /* NULL-terminated; patch only images matching one of these */
  const char *const *except_images; /* NULL-terminated; never patch images matching these */
  elfhook_image_filter filter;
  void *filter_context;
  unsigned flags;                   /* ELFHOOK_CURRENT_IMAGES_ONLY */
} elfhook_options;

/* A set of rebindings that can be removed as one. */
typedef struct elfhook_handle elfhook_handle;

/*
 * Like rebind_symbols, with options (NULL: all images, now and later) and a handle to undo it.
 * `handle` may be NULL when the rebinding is permanent. The rebinding array is copied; the names
 * and the `replaced` pointers must stay valid until the handle is removed.
 */
ELFHOOK_EXPORT int elfhook_rebind(const struct rebinding *rebindings, size_t count,
                                  const elfhook_options *options, elfhook_handle **handle);

/* Like rebind_symbols_image, with a handle to undo it. */
ELFHOOK_EXPORT int elfhook_rebind_image(const void *header, intptr_t slide,
                                        const struct rebinding *rebindings, size_t count,
                                        elfhook_handle **handle);

/*
 * Undoes one rebinding set and frees its handle. Slots it still owns get back the function they
 * held before it; where a later rebinding sits on top, the chain is mended instead: the later
 * rebinding's `replaced` now receives this one's original, so every remaining hook stays in the
 * chain in any order of removal.
 */
ELFHOOK_EXPORT int elfhook_unbind(elfhook_handle *handle);

/* ---------------------------------------------------------------------------------------------
 * Inline hooks: the functions no GOT slot reaches
 *
 * A GOT slot exists only for a call from one image into another. A call inside one image (a
 * statically linked library, a library calling its own function, a static function) goes straight
 * to the function. An attachment patches the function's first instructions with a jump to the
 * replacement; `original` receives a trampoline holding the displaced instructions, relocated, and
 * a jump back, so it calls the function as it was.
 *
 * Safety while other threads run the function. On x86_64 the patch is a 5-byte `jmp rel32` to a stub
 * near the function, written as one aligned 8-byte store when it fits in one, otherwise behind an
 * int3 staged on its first byte; a thread that was stopped between the displaced instructions
 * resumes on a trap byte the patch leaves there and is moved into the trampoline by the engine's
 * SIGTRAP/SIGILL handler (inline_x86_64.c explains the scheme). On aarch64 the patch is one `b`
 * instruction, one aligned 4-byte store, followed by the instruction cache maintenance
 * (inline_aarch64.c). Code pages are writable only during the write and get back their exact
 * protection. A prologue that cannot be moved safely is refused with a status naming
 * why (ELFHOOK_ERR_UNKNOWN_INSTRUCTION, _FUNCTION_TOO_SHORT, _JUMP_INTO_PATCH, _OUT_OF_RANGE) and
 * the function is left untouched.
 *
 * Attach twice to one function and the attachments chain, newest first: the newest replacement
 * runs first and its `original` calls the one attached before it. Detach in any order: the chain
 * is mended (the attachment above a detached one gets its original), and the last detach puts
 * back the function's original bytes. Trampolines are kept for the life of the process (a thread
 * may still be running in one), and reused when the same function is attached again.
 * ------------------------------------------------------------------------------------------- */

typedef struct elfhook_attachment elfhook_attachment;

/*
 * Attaches `replacement` to the function at `function` (an address inside no PLT: the function's
 * own code, as dlsym or a symbol table gives it). `*original`, when `original` is not NULL,
 * receives what calls the function as it was (or the previous attachment); the engine keeps it
 * current while the chain changes, so it must stay valid until the attachment is detached. `*out`
 * receives the attachment (NULL allowed when it is never detached). The function's size is taken
 * from .dynsym/.symtab when a symbol starts there, to refuse a function shorter than the patch.
 * Returns 0 or a negative elfhook_status; elfhook_last_error() names the function, its image and
 * the instruction byte that could not be relocated.
 */
ELFHOOK_EXPORT int elfhook_attach(void *function, void *replacement, void **original,
                                  elfhook_attachment **out);

/*
 * Like elfhook_attach, for the function named `symbol`, found in the .dynsym of a loaded image or,
 * when not exported, in the .symtab of the image's file (read directly: mapped read-only, every
 * offset checked; no libelf). `image_pattern` is an fnmatch(3) pattern matched against the image's
 * full path and its file name ("libssl.so*"); NULL means every image. The first match in link-map
 * order (the main program first) is attached; later images are not looked at. IFUNC symbols are
 * refused (attach to the implementation dlsym returns instead). A stripped file has no .symtab: its
 * unexported functions give ELFHOOK_ERR_SYMBOL_NOT_FOUND.
 */
ELFHOOK_EXPORT int elfhook_attach_symbol(const char *image_pattern, const char *symbol, void *replacement,
                                         void **original, elfhook_attachment **out);

/*
 * Detaches and frees an attachment. Later attachments to the same function stay, in their chain;
 * when it was the last one, the function's first bytes are restored exactly. Returns
 * ELFHOOK_ERR_UNKNOWN_HANDLE for an attachment already detached (or never returned by attach).
 */
ELFHOOK_EXPORT int elfhook_detach(elfhook_attachment *attachment);

/* What elfhook_inspect_function found. */
typedef struct elfhook_function_info {
  uint64_t address;   /* st_value: the link-time address (a loaded image adds its load bias) */
  uint64_t size;      /* st_size; 0 when unknown */
  int in_dynsym;      /* exported (.dynsym); 0: found in .symtab only */
  int is_local;       /* STB_LOCAL: a static function */
  int is_ifunc;       /* an IFUNC resolver (refused by elfhook_attach_symbol) */
  int attachable;     /* ELFHOOK_OK when elfhook_attach could patch it, else the status it would refuse with */
  char reason[256];   /* the refusal's text, as elfhook_last_error() would give it; empty when attachable */
} elfhook_function_info;

/*
 * Looks `symbol` up in the ELF file at `path` (.dynsym, then .symtab; read directly, mapped
 * read-only, every offset checked) and checks whether elfhook_attach could patch its first
 * instructions: the same decoding and refusals, read from the file, without placing a stub or
 * writing anything (so ELFHOOK_ERR_OUT_OF_RANGE, which depends on the process, is never reported).
 * Files of the engine's own architecture only. Returns ELFHOOK_OK with *info filled,
 * ELFHOOK_ERR_SYMBOL_NOT_FOUND, or ELFHOOK_ERR_MALFORMED_IMAGE (not a 64-bit ELF file of this
 * architecture, or the symbol lies in no segment). `elfhook inspect --function` prints it.
 */
ELFHOOK_EXPORT int elfhook_inspect_function(const char *path, const char *symbol, elfhook_function_info *info);

/* Counters for tests and benchmarks. */
typedef struct elfhook_statistics {
  uint64_t images_parsed;  /* dynamic sections parsed: each image once in its lifetime */
  uint64_t images_skipped; /* images that could not be parsed */
  uint64_t slots_written;  /* GOT stores made */
  uint64_t dlopen_absorbed;/* dlopen calls after which new images were patched */
} elfhook_statistics;

ELFHOOK_EXPORT void elfhook_get_statistics(elfhook_statistics *statistics);

#ifdef __cplusplus
}
#endif

#endif /* ELFHOOK_H */
