/* Inline hooks on x86_64: decoding, relocating, placing the stub, writing the patch.
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
 * What this cannot cover, and says in docs/limits.md: a thread that blocks SIGTRAP and is stopped on a
 * displaced boundary (the kernel then kills the process for the trap, as for any breakpoint); a
 * jump from the function's body back into its first 5 bytes is correct but costs a trap each time;
 * a host that replaces the SIGTRAP handler while hooks are attached.
 *
 * Why a hand-written decoder rather than capstone or zydis: Debian's libcapstone.a linked into a
 * program adds 6.6 MB (it registers every architecture), more than the whole injected monitor; Debian
 * ships zydis only as a shared library (libzydis4.0), a dependency the hosts the monitor is injected
 * into do not have. Prologues use a small part of the instruction set, and anything outside it is
 * refused, never guessed (x86_decode.c). */
#include "inline_private.h"

#if defined(__x86_64__)

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>

#define PATCH_LENGTH 5
#define STUB_LENGTH 6

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

/* Tries a stub at `stub`. On failure, *skip_to_end / *skip_to_start say where the mapping in the way
 * ends and starts (0 when only this address failed). */
static bool try_stub(const eh_protection_map *maps, uintptr_t stub, stub_place *place, uintptr_t *mapping_start,
                     uintptr_t *mapping_end) {
  *mapping_start = *mapping_end = 0;
  size_t page_size = eh_page_size();
  uintptr_t page = stub & ~(uintptr_t)(page_size - 1);
  if (page < 0x100000 || page > 0x7ffffffde000) return false;
  eh_block *block = eh_block_at(page);
  if (!block) {
    for (size_t i = 0; i < maps->count; i++) {
      if (maps->mappings[i].start < page + 2 * page_size && maps->mappings[i].end > page) {
        *mapping_start = maps->mappings[i].start;
        *mapping_end = maps->mappings[i].end;
        return false;
      }
    }
    block = eh_block_create(page);
    if (!block) return false;
  }
  if (block->slots_used >= page_size / sizeof(void *) || !eh_block_bytes_free(block, (unsigned)(stub - page), STUB_LENGTH))
    return false;
  eh_block_mark(block, (unsigned)(stub - page), STUB_LENGTH, true);
  uintptr_t trampoline;
  if (!eh_block_place(block, EH_TRAMPOLINE_CAPACITY, &trampoline)) {
    eh_block_mark(block, (unsigned)(stub - page), STUB_LENGTH, false);
    return false;
  }
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
      if (start && start >= next - 0x80000000ull + 2 * eh_page_size()) {
        int64_t target = (int64_t)(start - 2 * eh_page_size()) - (int64_t)next;
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

/* Decodes the instructions the patch displaces; refuses what cannot be moved. `readable`: bytes
 * that may be read from the function (to the end of its segment); `size`: the symbol's, 0 unknown. */
static int decode_prologue(eh_site *site, eh_x86_insn *insns, size_t readable, size_t size, const char *what) {
  const uint8_t *code = (const uint8_t *)site->function;
  char bytes[64];
  eh_hex_bytes(bytes, sizeof bytes, code, readable < 16 ? readable : 16);
  if (size && size < PATCH_LENGTH)
    return elfhook_set_error(ELFHOOK_ERR_FUNCTION_TOO_SHORT, "%s is %zu bytes, shorter than the %d-byte patch (%s)",
                             what, size, PATCH_LENGTH, bytes);
  size_t offset = 0;
  int count = 0;
  while (offset < PATCH_LENGTH) {
    if (count == EH_MAX_DISPLACED || offset >= readable)
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
   * bytes (a loop whose head is the entry) would re-enter the hook, or trap on every turn; a jump
   * to the entry could be a tail call to itself, but is refused all the same (it cannot be told
   * from a loop). A linear
   * sweep, as far as the decoder knows the instructions: it stops at the first it does not. */
  size_t end = size && size <= readable ? size : 0;
  for (size_t at = offset; at < end;) {
    eh_x86_insn insn;
    if (eh_x86_decode(code + at, end - at, &insn) < 0) break;
    /* A call to the entry is recursion: it goes through the hook, as any call should. */
    bool recursion = insn.kind == EH_X86_CALL && insn.target == site->function;
    if (insn.branch_size && !recursion && insn.target >= site->function && insn.target < site->function + offset)
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
  for (eh_site *site = __atomic_load_n(&eh_inline_sites, __ATOMIC_ACQUIRE); site; site = site->next) {
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
int eh_arch_before_write(void) {
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

int eh_arch_write_patch(const eh_site *site, const uint8_t *bytes, bool restoring, const char *what) {
  uintptr_t function = site->function, word = function & ~(uintptr_t)7;
  eh_open_code open;
  int status = eh_code_open(function, PATCH_LENGTH, &open, what);
  if (status != ELFHOOK_OK) return status;
  if (function + PATCH_LENGTH <= word + 8) {
    /* One aligned 8-byte store: the bytes around the patch are kept as they are. */
    uint64_t value = __atomic_load_n((uint64_t *)word, __ATOMIC_RELAXED);
    memcpy((uint8_t *)&value + (function - word), bytes, PATCH_LENGTH);
    __atomic_store_n((uint64_t *)word, value, __ATOMIC_SEQ_CST);
    __builtin___clear_cache((char *)word, (char *)word + 8);
    eh_sync_cores();
  } else {
    /* Staged: int3 first, then the tail (first bytes of instructions, then the rest), then the
     * first byte. At every step each byte a thread may start an instruction at is either a whole
     * original instruction, an int3 the handler understands, or the finished jump. */
    volatile uint8_t *code = (volatile uint8_t *)function;
    code[0] = 0xCC;
    eh_sync_cores();
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
      eh_sync_cores();
    }
    code[0] = bytes[0];
    __builtin___clear_cache((char *)function, (char *)function + PATCH_LENGTH);
    eh_sync_cores();
  }
  return eh_code_close(&open, what);
}

int eh_arch_check_prologue(const uint8_t *code, size_t available, size_t size, const char *what) {
  eh_site site = {.function = (uintptr_t)code};
  eh_x86_insn insns[EH_MAX_DISPLACED];
  return decode_prologue(&site, insns, available, size, what);
}

/* ---- a new site ------------------------------------------------------------------------------------ */

int eh_arch_prepare_site(eh_site *site, size_t readable, size_t size, const char *what) {
  eh_x86_insn insns[EH_MAX_DISPLACED];
  int status = decode_prologue(site, insns, readable, size, what);
  if (status != ELFHOOK_OK) return status;
  stub_place place = {0};
  if (find_stub(site->function, site, &place) != ELFHOOK_OK)
    return elfhook_set_error(ELFHOOK_ERR_OUT_OF_RANGE, "%s: no free page within ±2 GB where the patch's jump can land",
                             what);
  uint8_t code[EH_TRAMPOLINE_CAPACITY];
  size_t length = 0;
  status = relocate(site, insns, place.trampoline, code, &length, what);
  if (status == ELFHOOK_OK) {
    site->slot = eh_block_slot(place.block);
    site->trampoline = (uint8_t *)place.trampoline;
    __atomic_store_n(site->slot, (void *)site->trampoline, __ATOMIC_RELEASE);
    uint8_t stub[STUB_LENGTH] = {0xFF, 0x25}; /* jmp [rip + disp32]: the slot */
    put32(stub + 2, (int32_t)((uintptr_t)site->slot - (place.stub + STUB_LENGTH)));
    status = eh_block_write(place.block, place.trampoline, code, length);
    if (status == ELFHOOK_OK) status = eh_block_write(place.block, place.stub, stub, sizeof stub);
  }
  if (status != ELFHOOK_OK) {
    eh_block_mark(place.block, (unsigned)(place.stub - place.block->code), STUB_LENGTH, false);
    eh_block_mark(place.block, (unsigned)(place.trampoline - place.block->code), EH_TRAMPOLINE_CAPACITY, false);
    return status;
  }
  site->patch_length = PATCH_LENGTH;
  site->patch[0] = 0xE9;
  put32(site->patch + 1, (int32_t)(place.stub - (site->function + PATCH_LENGTH)));
  return ELFHOOK_OK;
}

#endif
