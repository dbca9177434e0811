/* Inline hooks on aarch64: relocating the first instruction, placing the stub, writing the patch.
 *
 *   function:   b <stub>                 one instruction: ±128 MB, so the stub is placed that near
 *   stub:       ldr x16, <slot>; br x16  x16 (IP0) is free at a function's entry: the procedure call
 *                                        standard lets any veneer between caller and callee clobber it
 *   trampoline: the first instruction, relocated, then b <function + 4>
 *
 * Why this is safe while other threads run the function: the patch is one 4-byte instruction,
 * aligned, written with one single-copy-atomic store, so a thread fetches the old instruction or
 * the new branch, never a mix; and since only one instruction is displaced, no thread can be stopped
 * in the middle of the displaced code (x86_64 needs its trap bytes for that). The data cache is
 * cleaned and the instruction cache invalidated for the word (__builtin___clear_cache), and
 * membarrier(SYNC_CORE), where the kernel has it, makes every other core run an ISB-equivalent
 * before it returns to user code. One caveat, said in docs/engine.md: the architecture guarantees
 * concurrent modification only between B, BL, NOP, BRK, SVC, HVC, SMC and ISB, and a function's first
 * instruction is usually something else (bti, paciasp, stp); cores fetch an aligned word whole in
 * practice, which is what every aarch64 inline hooker relies on.
 *
 * Relocation covers every PC-relative instruction of A64 (b, bl, b.cond, cbz/cbnz, tbz/tbnz, adr,
 * adrp, ldr/ldrsw/prfm literal); everything else does not depend on where it runs and is copied. It
 * refuses: SIMD loads from a literal, svc/hvc/smc/brk/hlt/udf (a system call or a breakpoint is no
 * prologue), a branch back to the first instruction (from it, or — when the symbol's size is known —
 * from the body: a loop whose head is the entry would re-enter the hook). */
#include "inline_private.h"

#if defined(__aarch64__)

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PATCH_LENGTH 4
#define STUB_LENGTH 8
#define BRANCH_RANGE ((intptr_t)128 << 20)

static const uint32_t X16 = 16;

static int64_t sign_extend(uint64_t value, int bits) {
  uint64_t sign = 1ull << (bits - 1);
  return (int64_t)((value ^ sign) - sign);
}

static bool within(uintptr_t from, uintptr_t to, intptr_t range) {
  intptr_t distance = (intptr_t)(to - from);
  return distance >= -range && distance < range;
}

/* b (or bl) from `at` to `target`; false when out of ±128 MB. */
static bool branch(uint32_t *out, uintptr_t at, uintptr_t target, bool link) {
  if (!within(at, target, BRANCH_RANGE)) return false;
  *out = (link ? 0x94000000u : 0x14000000u) | ((uint32_t)((target - at) >> 2) & 0x03FFFFFFu);
  return true;
}

static size_t put64(uint32_t *out, uint64_t value) {
  out[0] = (uint32_t)value;
  out[1] = (uint32_t)(value >> 32);
  return 2;
}

/* ldr x16, #8; br x16; .quad target */
static size_t far_jump(uint32_t *out, uint64_t target) {
  out[0] = 0x58000040u | X16;
  out[1] = 0xD61F0000u | (X16 << 5);
  return 2 + put64(out + 2, target);
}

/* What the first instruction is, for relocation. */
typedef enum a64_kind { A64_COPY, A64_B, A64_BL, A64_BCOND, A64_CB, A64_TB, A64_ADR, A64_LDR_LITERAL, A64_ENDS } a64_kind;

typedef struct a64_insn {
  a64_kind kind;
  uint64_t target;   /* branch target, adr/adrp value, literal address */
  unsigned register_number;
  unsigned load_kind; /* ldr literal: 0 ldr w, 1 ldr x, 2 ldrsw, 3 prfm */
} a64_insn;

/* Classifies `word` at `pc`; -1 for what is refused (with *why). */
static int classify(uint32_t word, uintptr_t pc, a64_insn *insn, const char **why) {
  memset(insn, 0, sizeof *insn);
  insn->register_number = word & 0x1F;
  if ((word & 0x7C000000u) == 0x14000000u) { /* b, bl */
    insn->kind = (word & 0x80000000u) ? A64_BL : A64_B;
    insn->target = pc + (uint64_t)(sign_extend(word & 0x03FFFFFFu, 26) * 4);
  } else if ((word & 0xFF000010u) == 0x54000000u) { /* b.cond */
    insn->kind = A64_BCOND;
    insn->target = pc + (uint64_t)(sign_extend((word >> 5) & 0x7FFFF, 19) * 4);
    if ((word & 0xF) >= 0xE) insn->kind = A64_B; /* b.al, b.nv: always taken */
  } else if ((word & 0x7E000000u) == 0x34000000u) { /* cbz, cbnz */
    insn->kind = A64_CB;
    insn->target = pc + (uint64_t)(sign_extend((word >> 5) & 0x7FFFF, 19) * 4);
  } else if ((word & 0x7E000000u) == 0x36000000u) { /* tbz, tbnz */
    insn->kind = A64_TB;
    insn->target = pc + (uint64_t)(sign_extend((word >> 5) & 0x3FFF, 14) * 4);
  } else if ((word & 0x1F000000u) == 0x10000000u) { /* adr, adrp */
    int64_t immediate = sign_extend(((word >> 5) & 0x7FFFF) << 2 | ((word >> 29) & 3), 21);
    insn->kind = A64_ADR;
    insn->target = (word & 0x80000000u) ? (pc & ~(uint64_t)0xFFF) + (uint64_t)(immediate * 4096) : pc + (uint64_t)immediate;
  } else if ((word & 0x3B000000u) == 0x18000000u) { /* ldr literal */
    if (word & (1u << 26)) {
      *why = "a SIMD load from a literal";
      return -1;
    }
    insn->kind = A64_LDR_LITERAL;
    insn->load_kind = word >> 30;
    insn->target = pc + (uint64_t)(sign_extend((word >> 5) & 0x7FFFF, 19) * 4);
  } else if ((word & 0xFFFFFC1Fu) == 0xD65F0000u || (word & 0xFFFFFC1Fu) == 0xD61F0000u ||
             (word & 0xFFFFFBFFu) == 0xD65F0BFFu) { /* ret, br, retaa/retab */
    insn->kind = A64_ENDS;
  } else if ((word & 0xFF000000u) == 0xD4000000u) { /* svc, hvc, smc, brk, hlt, dcps */
    *why = "an exception-generating instruction (svc, brk, hlt…)";
    return -1;
  } else if ((word & 0xFFFF0000u) == 0) {
    *why = "udf (permanently undefined)";
    return -1;
  }
  return 0;
}

/* The relocated instruction and the jump back, for a trampoline at `at`. */
static int relocate(const a64_insn *insn, uint32_t word, uintptr_t at, uintptr_t back, uint32_t *out, size_t *count) {
  size_t n = 0;
  int64_t distance = (int64_t)(insn->target - (at + 0));
  switch (insn->kind) {
  case A64_COPY:
    out[n++] = word;
    break;
  case A64_ENDS:
    out[n++] = word;
    *count = n;
    return ELFHOOK_OK;
  case A64_B:
    if (branch(&out[n], at, insn->target, false)) n++;
    else n += far_jump(out + n, insn->target);
    *count = n;
    return ELFHOOK_OK;
  case A64_BL:
    if (branch(&out[n], at, insn->target, true)) {
      n++;
    } else { /* ldr x16, #12; blr x16; b #12; .quad target */
      out[n++] = 0x58000060u | X16;
      out[n++] = 0xD63F0000u | (X16 << 5);
      out[n++] = 0x14000003u;
      n += put64(out + n, insn->target);
    }
    break;
  case A64_BCOND:
  case A64_CB:
    if (distance >= -(1 << 20) && distance < (1 << 20)) {
      out[n++] = (word & ~(0x7FFFFu << 5)) | (((uint32_t)(distance >> 2) & 0x7FFFF) << 5);
    } else { /* the inverse condition skips a far jump */
      uint32_t inverse = insn->kind == A64_BCOND ? (word ^ 1u) : (word ^ (1u << 24));
      out[n++] = (inverse & ~(0x7FFFFu << 5)) | (5u << 5);
      n += far_jump(out + n, insn->target);
    }
    break;
  case A64_TB:
    if (distance >= -(1 << 15) && distance < (1 << 15)) {
      out[n++] = (word & ~(0x3FFFu << 5)) | (((uint32_t)(distance >> 2) & 0x3FFF) << 5);
    } else {
      out[n++] = ((word ^ (1u << 24)) & ~(0x3FFFu << 5)) | (5u << 5);
      n += far_jump(out + n, insn->target);
    }
    break;
  case A64_ADR: /* ldr xd, #8; b #12; .quad value */
    out[n++] = 0x58000040u | insn->register_number;
    out[n++] = 0x14000003u;
    n += put64(out + n, insn->target);
    break;
  case A64_LDR_LITERAL: {
    unsigned rt = insn->register_number;
    if (insn->load_kind == 3) { /* prfm: a hint, dropped */
      out[n++] = 0xD503201Fu;
      break;
    }
    static const uint32_t loads[3] = {0xB9400000u, 0xF9400000u, 0xB9800000u}; /* ldr w, ldr x, ldrsw x: [xt] */
    out[n++] = 0x58000060u | rt;                 /* ldr xt, #12: the address */
    out[n++] = loads[insn->load_kind] | (rt << 5) | rt;
    out[n++] = 0x14000003u;                       /* b over the literal */
    n += put64(out + n, insn->target);
    break;
  }
  }
  if (!branch(&out[n], at + n * 4, back, false)) return ELFHOOK_ERR_OUT_OF_RANGE;
  *count = n + 1;
  return ELFHOOK_OK;
}

/* A block within ±128 MB of `function` (minus the block itself) with room for a stub, a trampoline
 * and a slot: an existing one, or a new one in the free gap nearest the function. */
static eh_block *block_near(uintptr_t function, uintptr_t *stub, uintptr_t *trampoline) {
  size_t page_size = eh_page_size(), count;
  intptr_t reach = BRANCH_RANGE - 2 * (intptr_t)page_size;
  eh_block *const *blocks = eh_blocks(&count);
  for (size_t i = 0; i < count; i++) {
    eh_block *block = blocks[i];
    if (!within(function, block->code, reach) || block->slots_used >= page_size / sizeof(void *)) continue;
    if (!eh_block_place(block, STUB_LENGTH, stub)) continue;
    if (eh_block_place(block, EH_TRAMPOLINE_CAPACITY, trampoline)) return block;
    eh_block_mark(block, (unsigned)(*stub - block->code), STUB_LENGTH, false);
  }
  eh_protection_map maps = {0};
  if (eh_protection_map_load(&maps) != ELFHOOK_OK) return NULL;
  eh_block *found = NULL;
  uintptr_t tried[64];
  size_t tried_count = 0;
  while (!found && tried_count < 64) {
    /* The free gaps between mappings; in each, the two pages nearest the function. */
    uintptr_t best = 0, best_distance = UINTPTR_MAX;
    for (size_t i = 0; i <= maps.count; i++) {
      uintptr_t gap_start = i ? maps.mappings[i - 1].end : 0x10000;
      uintptr_t gap_end = i < maps.count ? maps.mappings[i].start : 0xFFFFFFFF0000ull;
      gap_start = (gap_start + page_size - 1) & ~(uintptr_t)(page_size - 1);
      if (gap_end < gap_start + 2 * page_size) continue;
      uintptr_t candidate = function < gap_start ? gap_start
                            : function >= gap_end ? gap_end - 2 * page_size
                                                   : (function & ~(uintptr_t)(page_size - 1));
      if (candidate + 2 * page_size > gap_end) candidate = gap_end - 2 * page_size;
      uintptr_t distance = candidate > function ? candidate - function : function - candidate;
      bool seen = false;
      for (size_t t = 0; t < tried_count; t++) seen |= tried[t] == candidate;
      if (!seen && distance < best_distance) {
        best = candidate;
        best_distance = distance;
      }
    }
    if (!best || !within(function, best, reach)) break;
    tried[tried_count++] = best;
    found = eh_block_create(best);
  }
  eh_protection_map_free(&maps);
  if (found && eh_block_place(found, STUB_LENGTH, stub) && eh_block_place(found, EH_TRAMPOLINE_CAPACITY, trampoline))
    return found;
  return NULL;
}

/* Classifies the first instruction at `code` (run at `address`) and refuses what cannot move. */
static int check_first(const uint32_t *code, uintptr_t address, size_t readable, size_t size, const char *what,
                       a64_insn *insn) {
  char bytes[64];
  eh_hex_bytes(bytes, sizeof bytes, (const uint8_t *)code, readable < 16 ? readable : 16);
  if (address % 4 != 0 || readable < PATCH_LENGTH || (size && size < PATCH_LENGTH))
    return elfhook_set_error(ELFHOOK_ERR_FUNCTION_TOO_SHORT, "%s is shorter than the %d-byte patch (%s)", what,
                             PATCH_LENGTH, bytes);
  uint32_t word = code[0];
  const char *why = NULL;
  if (classify(word, address, insn, &why) < 0)
    return elfhook_set_error(ELFHOOK_ERR_UNKNOWN_INSTRUCTION,
                             "%s: cannot relocate the instruction at +0 (0x%08x: %s; first bytes %s)", what, word, why,
                             bytes);
  if (insn->kind != A64_COPY && insn->kind != A64_ENDS && insn->kind != A64_ADR && insn->kind != A64_LDR_LITERAL &&
      insn->target == address)
    return elfhook_set_error(ELFHOOK_ERR_JUMP_INTO_PATCH,
                             "%s: the jump at +0 goes back to +0, inside the %d bytes the patch displaces (%s)", what,
                             PATCH_LENGTH, bytes);
  /* The body, when its size is known: a branch back to the entry would re-enter the hook. */
  size_t end = size && size <= readable ? size / 4 : 0;
  for (size_t i = 1; i < end; i++) {
    a64_insn other;
    const char *ignored;
    if (classify(code[i], address + i * 4, &other, &ignored) == 0 &&
        (other.kind == A64_B || other.kind == A64_BCOND || other.kind == A64_CB || other.kind == A64_TB) &&
        other.target == address)
      return elfhook_set_error(ELFHOOK_ERR_JUMP_INTO_PATCH,
                               "%s: the jump at +%zu goes back to +0, inside the %d bytes the patch displaces (%s)",
                               what, i * 4, PATCH_LENGTH, bytes);
  }
  return ELFHOOK_OK;
}

int eh_arch_check_prologue(const uint8_t *code, size_t available, size_t size, const char *what) {
  a64_insn insn;
  return check_first((const uint32_t *)code, (uintptr_t)code, available, size, what, &insn);
}

int eh_arch_prepare_site(eh_site *site, size_t readable, size_t size, const char *what) {
  const uint32_t *code = (const uint32_t *)site->function;
  uint32_t word = code[0];
  a64_insn insn;
  int checked = check_first(code, site->function, readable, size, what, &insn);
  if (checked != ELFHOOK_OK) return checked;
  uintptr_t stub, trampoline;
  eh_block *block = block_near(site->function, &stub, &trampoline);
  if (!block)
    return elfhook_set_error(ELFHOOK_ERR_OUT_OF_RANGE, "%s: no free page within ±128 MB where the patch's branch can land",
                             what);
  uint32_t out[EH_TRAMPOLINE_CAPACITY / 4];
  size_t count = 0;
  int status = relocate(&insn, word, trampoline, site->function + PATCH_LENGTH, out, &count);
  if (status != ELFHOOK_OK) {
    eh_block_mark(block, (unsigned)(stub - block->code), STUB_LENGTH, false);
    eh_block_mark(block, (unsigned)(trampoline - block->code), EH_TRAMPOLINE_CAPACITY, false);
    return elfhook_set_error(status, "%s: the trampoline is out of reach of the function", what);
  }
  site->slot = eh_block_slot(block);
  site->trampoline = (uint8_t *)trampoline;
  __atomic_store_n(site->slot, (void *)trampoline, __ATOMIC_RELEASE);
  uint32_t stub_code[2] = {
      0x58000000u | ((uint32_t)(((uintptr_t)site->slot - stub) >> 2) & 0x7FFFF) << 5 | X16, /* ldr x16, slot */
      0xD61F0000u | (X16 << 5),                                                               /* br x16 */
  };
  status = eh_block_write(block, trampoline, out, count * 4);
  if (status == ELFHOOK_OK) status = eh_block_write(block, stub, stub_code, sizeof stub_code);
  if (status != ELFHOOK_OK) return status;
  site->length = PATCH_LENGTH;
  site->count = 1;
  site->boundaries[0] = 0;
  site->moved_to[0] = 0;
  memcpy(site->original, code, PATCH_LENGTH);
  uint32_t patch = 0;
  branch(&patch, site->function, stub, false); /* in reach: block_near chose the block so */
  memcpy(site->patch, &patch, PATCH_LENGTH);
  site->patch_length = PATCH_LENGTH;
  return ELFHOOK_OK;
}

int eh_arch_write_patch(const eh_site *site, const uint8_t *bytes, bool restoring, const char *what) {
  (void)restoring; /* one aligned word either way */
  eh_open_code open;
  int status = eh_code_open(site->function, PATCH_LENGTH, &open, what);
  if (status != ELFHOOK_OK) return status;
  uint32_t word;
  memcpy(&word, bytes, sizeof word);
  __atomic_store_n((uint32_t *)site->function, word, __ATOMIC_SEQ_CST);
  __builtin___clear_cache((char *)site->function, (char *)site->function + PATCH_LENGTH);
  eh_sync_cores();
  return eh_code_close(&open, what);
}

int eh_arch_before_write(void) { return ELFHOOK_OK; }

#endif
