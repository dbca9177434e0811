/* Inline hooks: attach a replacement to a function by patching its first instructions.
 *
 * The shapes (x86_64):
 *
 *   function:   E9 <rel32>            5 bytes over the first instructions ("displaced")
 *   stub:       FF 25 <disp32>        jmp [slot], in a trampoline page within ±2 GB of the function
 *   slot:       the newest replacement (a data page beside the stub: the chain changes with one
 *               atomic pointer store, never a code write)
 *   trampoline: the displaced instructions, relocated, then a jump back to function + length
 *
 * Why the patch is safe while other threads run the function. A thread is always at an instruction
 * boundary of the function (preemption and signals stop it between instructions), so the danger is
 * a thread that sees a half-written patch, or one stopped between the displaced instructions that
 * resumes in the middle of the new jump. Both are handled:
 *
 *  1. The stub's address is chosen so that every byte of rel32 that lands on a boundary of a
 *     displaced instruction is 0xCC (int3). A thread stopped at such a boundary resumes on an int3,
 *     and the engine's SIGTRAP handler moves it to the same instruction in the trampoline. Finding
 *     such an address is a search over the free pages within ±2 GB (one constrained byte leaves
 *     2^24 distances, a typical `push rbp; mov rbp,rsp` prologue 2^16).
 *  2. When the 5 bytes lie inside one aligned 8-byte word (every function aligned to 8 or 16, which
 *     is what -O2 emits) they are written with one atomic 8-byte store: a thread sees the old or the
 *     new bytes, never a mix. Otherwise the write is staged: int3 on the first byte, then the tail
 *     bytes, then the first byte — with a membarrier(SYNC_CORE) between the steps so that no core
 *     runs stale instructions (the sequence Linux's text_poke_bp uses). A thread that meets the
 *     staged int3 is moved to the trampoline's start, i.e. runs the function as it was.
 * Detach runs the same steps with the original bytes. The trampolines stay for the life of the
 * process (a thread may be in one at any time) and are reused when the function is attached again.
 *
 * What this cannot cover, and says in README: a thread that blocks SIGTRAP and is stopped on a
 * displaced boundary (the kernel then kills the process for the trap, as for any breakpoint); a
 * jump from the function's body back into its first 5 bytes is correct but costs a trap each time;
 * a host that replaces the SIGTRAP handler while hooks are attached.
 *
 * Why a hand-written decoder rather than capstone or zydis: Debian's libcapstone.a linked into a
 * program adds 6.6 MB (it registers every architecture), more than the whole injected monitor; Debian
 * ships zydis only as a shared library (libzydis4.0), a dependency the hosts the monitor is injected
 * into do not have. Prologues use a small part of the instruction set, and anything outside it is
 * refused, never guessed (x86_decode.c). */
#include "engine_private.h"

#include <dlfcn.h>
#include <errno.h>
#include <fnmatch.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

struct elfhook_attachment {
  struct eh_site *site;
  void *replacement;
  void **user_original;
  void *original;                    /* what this attachment's `original` calls */
  elfhook_attachment *below, *above; /* in the site's chain; the top is the newest */
};

#if defined(__x86_64__)

#include <linux/membarrier.h>

#define PATCH_LENGTH 5
#define MAX_DISPLACED 8
#define STUB_LENGTH 6
#define TRAMPOLINE_CAPACITY 160
#define PAGE 4096u

/* One patched (or once patched) function. Never freed: the SIGTRAP handler reads the list without
 * a lock, and threads may still be in its trampoline. */
typedef struct eh_site {
  struct eh_site *next;
  uintptr_t function;
  uint8_t length;                       /* bytes displaced: whole instructions, >= PATCH_LENGTH */
  uint8_t original[16];                 /* the function's first `length` bytes as they were */
  uint8_t patch[PATCH_LENGTH];
  uint8_t count;                        /* displaced instructions */
  uint8_t boundaries[MAX_DISPLACED];    /* their offsets in the function */
  uint16_t moved_to[MAX_DISPLACED];     /* their offsets in the trampoline */
  uint8_t *trampoline;
  void **slot;
  elfhook_attachment *top;
  bool installed;
  bool retired;                         /* its function's bytes changed; a new site replaced it */
  bool unloaded;                        /* its image was unloaded: never written again */
} eh_site;

/* A trampoline block: a code page (stubs and trampolines, read-execute) and a data page (slots). */
typedef struct eh_block {
  uintptr_t code;
  uint8_t used[PAGE / 8];
  unsigned slots_used;
} eh_block;

static eh_site *sites; /* newest first; read by the signal handlers with acquire loads */
static eh_block **blocks;
static size_t block_count, block_capacity;
static int sync_core_state; /* 0 unknown, 1 registered, -1 unavailable */

/* ---- cores and pages ------------------------------------------------------------------------------ */

/* Makes every thread of the process execute a serializing instruction before it runs user code
 * again, so none keeps a stale copy of bytes just written. Where the kernel lacks the command (before
 * 4.16, or seccomp), the mprotect around the write has already sent TLB-flush IPIs to the cores
 * running this process, which serializes them too on every kernel seen. */
static void sync_cores(void) {
  if (sync_core_state == 0)
    sync_core_state =
        syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED_SYNC_CORE, 0, 0) == 0 ? 1 : -1;
  if (sync_core_state == 1) syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED_SYNC_CORE, 0, 0);
}

typedef struct open_pages {
  uintptr_t page[2];
  int prior[2];
  int count;
} open_pages;

/* Makes the pages under [address, address + size) writable, keeping their exact protection. */
static int open_code(uintptr_t address, size_t size, open_pages *open, const char *what) {
  open->count = 0;
  uintptr_t first = address & ~(uintptr_t)(PAGE - 1), last = (address + size - 1) & ~(uintptr_t)(PAGE - 1);
  for (uintptr_t page = first; page <= last; page += PAGE) {
    int prior = eh_page_protection(page);
    if (prior < 0) return prior;
    if (!(prior & PROT_WRITE) && mprotect((void *)page, PAGE, prior | PROT_WRITE) != 0) {
      int error = errno;
      for (int i = 0; i < open->count; i++) mprotect((void *)open->page[i], PAGE, open->prior[i]);
      return elfhook_set_error(ELFHOOK_ERR_PROTECTION, "mprotect(%p, %u, +W) for %s: %s", (void *)page, PAGE, what,
                               strerror(error));
    }
    open->page[open->count] = page;
    open->prior[open->count++] = prior;
  }
  return ELFHOOK_OK;
}

static int close_code(const open_pages *open, const char *what) {
  int status = ELFHOOK_OK;
  for (int i = 0; i < open->count; i++)
    if (!(open->prior[i] & PROT_WRITE) && mprotect((void *)open->page[i], PAGE, open->prior[i]) != 0)
      status = elfhook_set_error(ELFHOOK_ERR_PROTECTION, "mprotect(%p, %u, restore) for %s: %s",
                                 (void *)open->page[i], PAGE, what, strerror(errno));
  return status;
}

/* ---- trampoline blocks ---------------------------------------------------------------------------- */

static bool bytes_free(const eh_block *block, unsigned offset, unsigned size) {
  if (offset + size > PAGE) return false;
  for (unsigned i = offset; i < offset + size; i++)
    if (block->used[i / 8] & (1u << (i % 8))) return false;
  return true;
}

static void mark(eh_block *block, unsigned offset, unsigned size, bool used) {
  for (unsigned i = offset; i < offset + size; i++) {
    if (used) block->used[i / 8] |= (uint8_t)(1u << (i % 8));
    else block->used[i / 8] &= (uint8_t)~(1u << (i % 8));
  }
}

static eh_block *block_at(uintptr_t page) {
  for (size_t i = 0; i < block_count; i++)
    if (blocks[i]->code == page) return blocks[i];
  return NULL;
}

/* Maps a new block exactly at `page` (code) and `page + PAGE` (data), or fails if anything is there. */
static eh_block *block_create(uintptr_t page) {
  if (block_count == block_capacity) {
    size_t grown = block_capacity ? block_capacity * 2 : 16;
    eh_block **bigger = realloc(blocks, grown * sizeof *bigger);
    if (!bigger) return NULL;
    blocks = bigger;
    block_capacity = grown;
  }
  eh_block *block = calloc(1, sizeof *block);
  if (!block) return NULL;
  void *mapped = mmap((void *)page, 2 * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE,
                      -1, 0);
  if (mapped == MAP_FAILED || (uintptr_t)mapped != page) {
    if (mapped != MAP_FAILED) munmap(mapped, 2 * PAGE); /* a kernel before 4.17 took it as a hint */
    free(block);
    return NULL;
  }
  mprotect(mapped, PAGE, PROT_READ | PROT_EXEC);
  block->code = page;
  blocks[block_count++] = block;
  return block;
}

/* Copies code into a block's page: writable (and still executable: other trampolines there may be
 * running) only for the copy. */
static int block_write(eh_block *block, uintptr_t address, const void *bytes, size_t size) {
  if (mprotect((void *)block->code, PAGE, PROT_READ | PROT_WRITE | PROT_EXEC) != 0)
    return elfhook_set_error(ELFHOOK_ERR_PROTECTION, "mprotect(%p, %u, RWX) of a trampoline page: %s",
                             (void *)block->code, PAGE, strerror(errno));
  memcpy((void *)address, bytes, size);
  __builtin___clear_cache((char *)address, (char *)address + size);
  mprotect((void *)block->code, PAGE, PROT_READ | PROT_EXEC);
  return ELFHOOK_OK;
}

/* ---- where the stub may go -------------------------------------------------------------------------
 * The rel32 of the patch is constrained at the bytes that land on displaced boundaries: each must
 * be a byte that traps when a thread starts an instruction there — int3 (SIGTRAP, the PC after
 * it) or an opcode invalid in 64-bit mode (SIGILL, the PC on it). Allowing the invalid opcodes, and
 * not int3 alone, matters where the top byte is constrained (endbr64 is 4 bytes): 0xCC there means
 * a distance of -0x33xxxxxx, below address 0 for a non-PIE program at 0x400000, whereas 0x06…0x61
 * give distances of +100 MB to +1.6 GB. The other bytes are free. Listing the distances as a
 * mixed-radix number v (a digit per byte: an index into that byte's allowed values), they increase
 * with v, so the nearest ones are found by binary search. */

static const uint8_t trap_bytes[] = {0x06, 0x07, 0x0E, 0x16, 0x17, 0x1E, 0x1F, 0x27, 0x2F, 0x37, 0x3F,
                                     0x60, 0x61, 0x82, 0x9A, 0xCC, 0xCE, 0xD4, 0xD5, 0xEA};


typedef struct distance_space {
  bool constrained[4]; /* byte k of rel32 (least significant first) must be a trap byte */
  uint64_t count;      /* how many distances there are */
} distance_space;

static uint32_t distance_of(const distance_space *space, uint64_t v) {
  uint32_t d = 0;
  for (int k = 0; k < 4; k++) {
    unsigned radix = space->constrained[k] ? sizeof trap_bytes : 256;
    unsigned digit = (unsigned)(v % radix);
    v /= radix;
    d |= (uint32_t)(space->constrained[k] ? trap_bytes[digit] : digit) << (8 * k);
  }
  return d;
}

/* The smallest v whose distance (as unsigned) is >= x; space->count when there is none. */
static uint64_t first_at_least(const distance_space *space, uint64_t x) {
  uint64_t low = 0, high = space->count;
  while (low < high) {
    uint64_t middle = (low + high) / 2;
    if (distance_of(space, middle) >= x) high = middle;
    else low = middle + 1;
  }
  return low;
}

typedef struct stub_place {
  eh_block *block;
  uintptr_t stub;
  uintptr_t trampoline;
} stub_place;

/* First fit for a trampoline in `block`, aligned to 16. */
static bool place_trampoline(eh_block *block, uintptr_t *trampoline) {
  for (unsigned offset = 0; offset + TRAMPOLINE_CAPACITY <= PAGE; offset += 16) {
    if (bytes_free(block, offset, TRAMPOLINE_CAPACITY)) {
      *trampoline = block->code + offset;
      return true;
    }
  }
  return false;
}

/* Tries a stub at `stub`. On failure, *skip_to_end / *skip_to_start say where the mapping in the way
 * ends and starts (0 when only this address failed). */
static bool try_stub(const eh_protection_map *maps, uintptr_t stub, stub_place *place, uintptr_t *mapping_start,
                     uintptr_t *mapping_end) {
  *mapping_start = *mapping_end = 0;
  uintptr_t page = stub & ~(uintptr_t)(PAGE - 1);
  if (page < 0x100000 || page > 0x7ffffffde000) return false;
  eh_block *block = block_at(page);
  if (!block) {
    for (size_t i = 0; i < maps->count; i++) {
      if (maps->mappings[i].start < page + 2 * PAGE && maps->mappings[i].end > page) {
        *mapping_start = maps->mappings[i].start;
        *mapping_end = maps->mappings[i].end;
        return false;
      }
    }
    block = block_create(page);
    if (!block) return false;
  }
  if (block->slots_used >= PAGE / sizeof(void *) || !bytes_free(block, (unsigned)(stub - page), STUB_LENGTH))
    return false;
  mark(block, (unsigned)(stub - page), STUB_LENGTH, true);
  uintptr_t trampoline;
  if (!place_trampoline(block, &trampoline)) {
    mark(block, (unsigned)(stub - page), STUB_LENGTH, false);
    return false;
  }
  mark(block, (unsigned)(trampoline - page), TRAMPOLINE_CAPACITY, true);
  *place = (stub_place){block, stub, trampoline};
  return true;
}

/* Finds a stub address reachable by the patch's rel32 whose boundary bytes trap, nearest first,
 * alternating above and below the function. */
static int find_stub(uintptr_t function, const eh_site *site, stub_place *place) {
  distance_space space = {.count = 1};
  for (int i = 1; i < site->count; i++)
    if (site->boundaries[i] < PATCH_LENGTH) space.constrained[site->boundaries[i] - 1] = true;
  for (int k = 0; k < 4; k++) space.count *= space.constrained[k] ? sizeof trap_bytes : 256;
  eh_protection_map maps = {0};
  int status = eh_protection_map_load(&maps);
  if (status != ELFHOOK_OK) return status;
  uintptr_t next = function + PATCH_LENGTH; /* rel32 counts from the end of the jump */
  /* Above: distances 0 .. 2^31-1 upward. Below: distances -1 .. -2^31 downward. */
  uint64_t up = first_at_least(&space, 0), down = first_at_least(&space, 0x100000000ull);
  bool up_done = up >= space.count || distance_of(&space, up) >= 0x80000000u;
  bool down_done = down == 0;
  if (!down_done) down--;
  if (!down_done && distance_of(&space, down) < 0x80000000u) down_done = true;
  bool found = false;
  for (int attempts = 0; !found && (!up_done || !down_done) && attempts < 200000; attempts++) {
    int64_t up_distance = up_done ? INT64_MAX : (int64_t)distance_of(&space, up);
    int64_t down_distance = down_done ? INT64_MAX : -(int64_t)(int32_t)distance_of(&space, down);
    uintptr_t start, end;
    if (up_distance <= down_distance) {
      uintptr_t stub = next + (uintptr_t)up_distance;
      found = try_stub(&maps, stub, place, &start, &end);
      if (found) break;
      if (end) up = first_at_least(&space, (uint64_t)(end - next) + 0);
      else up++;
      up_done = up >= space.count || distance_of(&space, up) >= 0x80000000u;
    } else {
      uintptr_t stub = next - (uintptr_t)down_distance;
      found = try_stub(&maps, stub, place, &start, &end);
      if (found) break;
      /* The next stub below must leave two free pages under `start`. */
      if (start && start >= next - 0x80000000ull + 2 * PAGE) {
        int64_t target = (int64_t)(start - 2 * PAGE) - (int64_t)next;
        uint64_t v = first_at_least(&space, (uint64_t)(uint32_t)(int32_t)target + 1);
        if (v == 0) down_done = true;
        else down = v - 1;
      } else if (start) {
        down_done = true;
      } else if (down == 0) {
        down_done = true;
      } else {
        down--;
      }
      if (!down_done && distance_of(&space, down) < 0x80000000u) down_done = true;
    }
  }
  eh_protection_map_free(&maps);
  return found ? ELFHOOK_OK : ELFHOOK_ERR_OUT_OF_RANGE;
}

/* ---- decoding and relocating the prologue ---------------------------------------------------------- */

static bool fits_rel32(intptr_t from_next, uintptr_t target) {
  int64_t distance = (int64_t)(target - (uintptr_t)from_next);
  return distance >= INT32_MIN && distance <= INT32_MAX;
}

static void put32(uint8_t *out, int32_t value) { memcpy(out, &value, 4); }
static void put64(uint8_t *out, uint64_t value) { memcpy(out, &value, 8); }

/* jmp to `target` from `at`: E9 rel32 when it reaches, else jmp [rip+0]; .quad target. */
static size_t emit_jump(uint8_t *out, uintptr_t at, uintptr_t target) {
  if (fits_rel32((intptr_t)(at + 5), target)) {
    out[0] = 0xE9;
    put32(out + 1, (int32_t)(target - (at + 5)));
    return 5;
  }
  static const uint8_t absolute[] = {0xFF, 0x25, 0, 0, 0, 0};
  memcpy(out, absolute, 6);
  put64(out + 6, target);
  return 14;
}

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

static void hex_bytes(char *out, size_t capacity, const uint8_t *bytes, size_t count) {
  size_t used = 0;
  out[0] = '\0';
  for (size_t i = 0; i < count && used + 4 < capacity; i++) used += (size_t)snprintf(out + used, capacity - used, "%s%02x", i ? " " : "", bytes[i]);
}

/* Decodes the instructions the patch displaces; refuses what cannot be moved. `readable`: bytes
 * that may be read from the function (to the end of its segment); `size`: the symbol's, 0 unknown. */
static int decode_prologue(eh_site *site, eh_x86_insn *insns, size_t readable, size_t size, const char *what) {
  const uint8_t *code = (const uint8_t *)site->function;
  char bytes[64];
  hex_bytes(bytes, sizeof bytes, code, readable < 16 ? readable : 16);
  if (size && size < PATCH_LENGTH)
    return elfhook_set_error(ELFHOOK_ERR_FUNCTION_TOO_SHORT, "%s is %zu bytes, shorter than the %d-byte patch (%s)",
                             what, size, PATCH_LENGTH, bytes);
  size_t offset = 0;
  int count = 0;
  while (offset < PATCH_LENGTH) {
    if (count == MAX_DISPLACED || offset >= readable)
      return elfhook_set_error(ELFHOOK_ERR_FUNCTION_TOO_SHORT, "%s: the code ends at +%zu (%s)", what, offset, bytes);
    eh_x86_insn *insn = &insns[count];
    if (eh_x86_decode(code + offset, readable - offset, insn) < 0)
      return elfhook_set_error(ELFHOOK_ERR_UNKNOWN_INSTRUCTION,
                               "%s: cannot relocate the instruction at +%zu (byte 0x%02x; first bytes %s)", what,
                               offset, code[offset], bytes);
    site->boundaries[count++] = (uint8_t)offset;
    offset += insn->length;
    bool ends = insn->kind == EH_X86_RET || insn->kind == EH_X86_INDIRECT_JMP || insn->kind == EH_X86_JMP;
    if (ends && offset < PATCH_LENGTH)
      return elfhook_set_error(ELFHOOK_ERR_FUNCTION_TOO_SHORT,
                               "%s ends (byte 0x%02x at +%zu) before the %d bytes the patch needs (%s)", what,
                               insn->opcode, offset - insn->length, PATCH_LENGTH, bytes);
  }
  if (size && offset > size)
    return elfhook_set_error(ELFHOOK_ERR_FUNCTION_TOO_SHORT,
                             "%s is %zu bytes; its first instructions run to +%zu (%s)", what, size, offset, bytes);
  for (int i = 0; i < count; i++) {
    if (insns[i].branch_size && insns[i].target >= site->function && insns[i].target < site->function + offset)
      return elfhook_set_error(ELFHOOK_ERR_JUMP_INTO_PATCH,
                               "%s: the jump at +%u goes back to +%lu, inside the %zu bytes the patch displaces (%s)",
                               what, site->boundaries[i], (unsigned long)(insns[i].target - site->function), offset,
                               bytes);
  }
  /* The rest of the function, when its size is known: a jump from the body back into the displaced
   * bytes (a loop whose head is the entry) would re-enter the hook, or trap on every turn. A linear
   * sweep, as far as the decoder knows the instructions: it stops at the first it does not. */
  size_t end = size && size <= readable ? size : 0;
  for (size_t at = offset; at < end;) {
    eh_x86_insn insn;
    if (eh_x86_decode(code + at, end - at, &insn) < 0) break;
    if (insn.branch_size && insn.target >= site->function && insn.target < site->function + offset)
      return elfhook_set_error(ELFHOOK_ERR_JUMP_INTO_PATCH,
                               "%s: the jump at +%zu goes back to +%lu, inside the %zu bytes the patch displaces (%s)",
                               what, at, (unsigned long)(insn.target - site->function), offset, bytes);
    at += insn.length;
  }
  site->count = (uint8_t)count;
  site->length = (uint8_t)offset;
  memcpy(site->original, code, offset);
  return ELFHOOK_OK;
}

/* Writes the relocated instructions for a trampoline at `at` into `out`. */
static int relocate(eh_site *site, const eh_x86_insn *insns, uintptr_t at, uint8_t *out, size_t *length,
                    const char *what) {
  size_t used = 0;
  const uint8_t *code = (const uint8_t *)site->function;
  bool ends = false;
  for (int i = 0; i < site->count; i++) {
    const eh_x86_insn *insn = &insns[i];
    const uint8_t *source = code + site->boundaries[i];
    uintptr_t here = at + used;
    site->moved_to[i] = (uint16_t)used;
    switch (insn->kind) {
    case EH_X86_JMP:
      used += emit_jump(out + used, here, insn->target);
      ends = true;
      break;
    case EH_X86_JCC:
      if (fits_rel32((intptr_t)(here + 6), insn->target)) {
        out[used] = 0x0F;
        out[used + 1] = (uint8_t)(0x80 | insn->condition);
        put32(out + used + 2, (int32_t)(insn->target - (here + 6)));
        used += 6;
      } else { /* j!cc over an absolute jump */
        size_t jump = emit_jump(out + used + 2, here + 2, insn->target);
        out[used] = (uint8_t)(0x70 | (insn->condition ^ 1));
        out[used + 1] = (uint8_t)jump;
        used += 2 + jump;
      }
      break;
    case EH_X86_CALL:
      if (fits_rel32((intptr_t)(here + 5), insn->target)) {
        out[used] = 0xE8;
        put32(out + used + 1, (int32_t)(insn->target - (here + 5)));
        used += 5;
      } else { /* call [rip+2]; jmp +8; .quad target */
        static const uint8_t far_call[] = {0xFF, 0x15, 2, 0, 0, 0, 0xEB, 8};
        memcpy(out + used, far_call, sizeof far_call);
        put64(out + used + 8, insn->target);
        used += 16;
      }
      break;
    default:
      memcpy(out + used, source, insn->length);
      if (insn->rip_disp_offset >= 0) {
        if (!fits_rel32((intptr_t)(here + insn->length), insn->target))
          return elfhook_set_error(ELFHOOK_ERR_OUT_OF_RANGE,
                                   "%s: the RIP-relative operand at +%u (%p) is out of the trampoline's reach", what,
                                   site->boundaries[i], (void *)insn->target);
        put32(out + used + insn->rip_disp_offset, (int32_t)(insn->target - (here + insn->length)));
      }
      used += insn->length;
      ends = insn->kind == EH_X86_RET || insn->kind == EH_X86_INDIRECT_JMP;
      break;
    }
  }
  if (!ends) used += emit_jump(out + used, at + used, site->function + site->length);
  *length = used;
  return ELFHOOK_OK;
}

/* ---- the SIGTRAP and SIGILL handlers -----------------------------------------------------------------
 * A thread that meets one of the engine's trap bytes is moved to the same instruction in the
 * trampoline: an int3 (SIGTRAP, SI_KERNEL) leaves the PC after it, an invalid opcode (SIGILL,
 * ILL_ILLOPN) on it. Any other signal goes to the handler that was there before, or gets the default
 * action. They read the site list only (never freed, published with release stores), so they are
 * async-signal-safe and take no lock. */

static struct sigaction previous_action[2]; /* SIGTRAP, SIGILL */

static bool redirect(ucontext_t *ucontext, uintptr_t at) {
  for (eh_site *site = __atomic_load_n(&sites, __ATOMIC_ACQUIRE); site; site = site->next) {
    if (__atomic_load_n(&site->unloaded, __ATOMIC_RELAXED)) continue;
    if (at < site->function || at >= site->function + site->length) continue;
    for (int i = 0; i < site->count; i++) {
      if (site->function + site->boundaries[i] == at) {
        ucontext->uc_mcontext.gregs[REG_RIP] = (greg_t)(site->trampoline + site->moved_to[i]);
        return true;
      }
    }
  }
  return false;
}

static void on_trap(int signal, siginfo_t *info, void *context) {
  ucontext_t *ucontext = context;
  uintptr_t pc = (uintptr_t)ucontext->uc_mcontext.gregs[REG_RIP];
  if (signal == SIGTRAP && info->si_code == SI_KERNEL && redirect(ucontext, pc - 1)) return;
  if (signal == SIGILL && info->si_code == ILL_ILLOPN && redirect(ucontext, pc)) return;
  const struct sigaction *previous = &previous_action[signal == SIGILL];
  if (previous->sa_flags & SA_SIGINFO) {
    if (previous->sa_sigaction) previous->sa_sigaction(signal, info, context);
  } else if (previous->sa_handler != SIG_DFL && previous->sa_handler != SIG_IGN) {
    previous->sa_handler(signal);
  } else {
    /* The default action, as without the engine: SIGILL re-executes the instruction; an int3 does
     * not, so the signal is raised again. */
    struct sigaction fallback = {.sa_handler = SIG_DFL};
    sigaction(signal, &fallback, NULL);
    if (signal == SIGTRAP) raise(SIGTRAP);
  }
}

/* Installs the handlers, or puts them back in front when the host replaced one since the last
 * attach (the host's then becomes the one forwarded to). Called before every patch write. */
static int install_trap_handlers(void) {
  static const int signals[2] = {SIGTRAP, SIGILL};
  struct sigaction action = {.sa_sigaction = on_trap, .sa_flags = SA_SIGINFO | SA_RESTART | SA_ONSTACK | SA_NODEFER};
  sigemptyset(&action.sa_mask);
  for (int i = 0; i < 2; i++) {
    struct sigaction current;
    if (sigaction(signals[i], NULL, &current) != 0)
      return elfhook_set_error(ELFHOOK_ERR_PROTECTION, "sigaction(%s): %s", strsignal(signals[i]), strerror(errno));
    if ((current.sa_flags & SA_SIGINFO) && current.sa_sigaction == on_trap) continue;
    if (sigaction(signals[i], &action, &previous_action[i]) != 0)
      return elfhook_set_error(ELFHOOK_ERR_PROTECTION, "sigaction(%s): %s", strsignal(signals[i]), strerror(errno));
  }
  return ELFHOOK_OK;
}

/* ---- writing the patch -------------------------------------------------------------------------------- */

/* Writes `bytes` (PATCH_LENGTH of them) over the function's first bytes, safely for running threads:
 * the patch when `restoring` is false, the original bytes when it is true. */
static int write_patch(const eh_site *site, const uint8_t *bytes, bool restoring, const char *what) {
  uintptr_t function = site->function, word = function & ~(uintptr_t)7;
  open_pages open;
  int status = open_code(function, PATCH_LENGTH, &open, what);
  if (status != ELFHOOK_OK) return status;
  if (function + PATCH_LENGTH <= word + 8) {
    /* One aligned 8-byte store: the bytes around the patch are kept as they are. */
    uint64_t value = __atomic_load_n((uint64_t *)word, __ATOMIC_RELAXED);
    memcpy((uint8_t *)&value + (function - word), bytes, PATCH_LENGTH);
    __atomic_store_n((uint64_t *)word, value, __ATOMIC_SEQ_CST);
    __builtin___clear_cache((char *)word, (char *)word + 8);
    sync_cores();
  } else {
    /* Staged: int3 first, then the tail (first bytes of instructions, then the rest), then the
     * first byte. At every step each byte a thread may start an instruction at is either a whole
     * original instruction, an int3 the handler understands, or the finished jump. */
    volatile uint8_t *code = (volatile uint8_t *)function;
    code[0] = 0xCC;
    sync_cores();
    bool boundary[PATCH_LENGTH] = {false};
    for (int i = 1; i < site->count; i++)
      if (site->boundaries[i] < PATCH_LENGTH) boundary[site->boundaries[i]] = true;
    for (int pass = 0; pass < 2; pass++) {
      for (int b = 1; b < PATCH_LENGTH; b++) {
        /* Putting the patch: boundary bytes (0xCC either way) first. Restoring: the tails first,
         * then the boundaries' first bytes, each completing a whole original instruction. */
        bool now = restoring ? (pass == 0) != boundary[b] : (pass == 0) == boundary[b];
        if (now) code[b] = bytes[b];
      }
      sync_cores();
    }
    code[0] = bytes[0];
    __builtin___clear_cache((char *)function, (char *)function + PATCH_LENGTH);
    sync_cores();
  }
  return close_code(&open, what);
}

/* ---- sites and chains ----------------------------------------------------------------------------- */

static eh_site *site_for(uintptr_t function) {
  for (eh_site *site = sites; site; site = site->next)
    if (site->function == function && !site->retired) return site;
  return NULL;
}

static eh_site *site_overlapping(uintptr_t function) {
  for (eh_site *site = sites; site; site = site->next)
    if (!site->retired && site->installed && function + PATCH_LENGTH > site->function &&
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
  eh_x86_insn insns[MAX_DISPLACED];
  int status = decode_prologue(site, insns, readable_from(image, function), size, what);
  stub_place place = {0};
  if (status == ELFHOOK_OK) {
    status = find_stub(function, site, &place);
    if (status != ELFHOOK_OK)
      status = elfhook_set_error(ELFHOOK_ERR_OUT_OF_RANGE,
                                 "%s: no free page within ±2 GB where the patch's jump can land", what);
  }
  uint8_t code[TRAMPOLINE_CAPACITY];
  size_t length = 0;
  if (status == ELFHOOK_OK) status = relocate(site, insns, place.trampoline, code, &length, what);
  if (status == ELFHOOK_OK) {
    eh_block *block = place.block;
    site->slot = (void **)(block->code + PAGE + block->slots_used++ * sizeof(void *));
    site->trampoline = (uint8_t *)place.trampoline;
    __atomic_store_n(site->slot, (void *)site->trampoline, __ATOMIC_RELEASE);
    uint8_t stub[STUB_LENGTH] = {0xFF, 0x25};
    put32(stub + 2, (int32_t)((uintptr_t)site->slot - (place.stub + STUB_LENGTH)));
    status = block_write(block, place.trampoline, code, length);
    if (status == ELFHOOK_OK) status = block_write(block, place.stub, stub, sizeof stub);
    site->patch[0] = 0xE9;
    put32(site->patch + 1, (int32_t)(place.stub - (function + PATCH_LENGTH)));
  }
  if (status != ELFHOOK_OK) {
    if (place.block) {
      mark(place.block, (unsigned)(place.stub - place.block->code), STUB_LENGTH, false);
      mark(place.block, (unsigned)(place.trampoline - place.block->code), TRAMPOLINE_CAPACITY, false);
    }
    free(site);
    return status;
  }
  site->next = sites;
  __atomic_store_n(&sites, site, __ATOMIC_RELEASE);
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
                     site->installed ? PATCH_LENGTH : site->length) != 0) {
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
  int handlers = install_trap_handlers();
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
    int status = write_patch(site, site->patch, false, what.text);
    /* Only a failure before the write leaves the original bytes; one after it (the protection
     * could not be put back) leaves the hook in place and working, and is not undone. */
    if (status != ELFHOOK_OK && memcmp((const void *)function, site->original, PATCH_LENGTH) == 0) {
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
  for (eh_site *site = sites; site; site = site->next)
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
    status = install_trap_handlers();
    if (status == ELFHOOK_OK) status = write_patch(site, site->original, true, what.text);
    site->installed = status != ELFHOOK_OK;
    __atomic_store_n(site->slot, (void *)site->trampoline, __ATOMIC_RELEASE);
  }
  free(attachment);
  return status;
}

void eh_inline_forget_image(const eh_image *image) {
  for (eh_site *site = sites; site; site = site->next) {
    if (!eh_image_contains(image, site->function)) continue;
    site->retired = true;
    __atomic_store_n(&site->unloaded, true, __ATOMIC_RELAXED);
  }
}

static bool pattern_matches(const char *pattern, const char *path) {
  if (!pattern) return true;
  const char *base = strrchr(path, '/');
  base = base ? base + 1 : path;
  return fnmatch(pattern, path, 0) == 0 || fnmatch(pattern, base, 0) == 0;
}

int elfhook_attach(void *function, void *replacement, void **original, elfhook_attachment **out) {
  elfhook_clear_error();
  if (!function || !replacement)
    return elfhook_set_error(ELFHOOK_ERR_INVALID_ARGUMENT, "elfhook_attach needs a function and a replacement");
  Dl_info info = {0}; /* for the error texts; outside the engine lock, as dladdr takes the loader's */
  const char *name = dladdr(function, &info) && info.dli_sname && info.dli_saddr == function ? info.dli_sname : NULL;
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
  int status = attach_locked((uintptr_t)function, size, image, name, replacement, original, out);
  eh_unlock();
  return status;
}

int elfhook_attach_symbol(const char *image_pattern, const char *symbol, void *replacement, void **original,
                          elfhook_attachment **out) {
  elfhook_clear_error();
  if (!symbol || !replacement)
    return elfhook_set_error(ELFHOOK_ERR_INVALID_ARGUMENT, "elfhook_attach_symbol needs a symbol and a replacement");
  eh_lock();
  eh_sync_and_absorb();
  elfhook_clear_error();
  int status = ELFHOOK_ERR_SYMBOL_NOT_FOUND;
  size_t searched = 0;
  for (size_t i = 0; i < eh_loaded_images.count && status == ELFHOOK_ERR_SYMBOL_NOT_FOUND; i++) {
    const eh_image *image = eh_loaded_images.images[i];
    if (image->is_vdso || !pattern_matches(image_pattern, image->path)) continue;
    searched++;
    eh_symbol found = {0};
    if (eh_find_function_symbol(image, symbol, &found) != ELFHOOK_OK) continue;
    if (found.is_ifunc) {
      status = elfhook_set_error(ELFHOOK_ERR_INVALID_ARGUMENT,
                                 "'%s' in %s is an IFUNC resolver: attach to the implementation dlsym returns", symbol,
                                 image->path);
      break;
    }
    status = attach_locked(found.address, found.size, image, symbol, replacement, original, out);
  }
  if (status == ELFHOOK_ERR_SYMBOL_NOT_FOUND)
    elfhook_set_error(status, "symbol '%s' not found in the .dynsym or .symtab of %zu image%s matching '%s' "
                      "(a stripped file has no .symtab)", symbol, searched, searched == 1 ? "" : "s",
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

#else /* not x86_64 */

void eh_inline_forget_image(const eh_image *image) { (void)image; }

static int unsupported(void) {
  return elfhook_set_error(ELFHOOK_ERR_UNSUPPORTED_ARCHITECTURE,
                           "inline hooks are implemented for x86_64 only; this engine was built for another "
                           "architecture (GOT rebinding works here)");
}

int elfhook_attach(void *function, void *replacement, void **original, elfhook_attachment **out) {
  (void)function, (void)replacement, (void)original, (void)out;
  return unsupported();
}

int elfhook_attach_symbol(const char *image_pattern, const char *symbol, void *replacement, void **original,
                          elfhook_attachment **out) {
  (void)image_pattern, (void)symbol, (void)replacement, (void)original, (void)out;
  return unsupported();
}

int elfhook_detach(elfhook_attachment *attachment) {
  (void)attachment;
  return elfhook_set_error(ELFHOOK_ERR_UNSUPPORTED_ARCHITECTURE, "inline hooks are implemented for x86_64 only");
}

#endif
