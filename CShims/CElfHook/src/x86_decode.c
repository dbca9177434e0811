/* A length decoder for the x86_64 instructions compilers put at the start of functions.
 *
 * Not a disassembler: it says how long an instruction is, where its RIP-relative displacement sits
 * and whether it is a relative branch, which is all the inline hook needs to copy the first
 * instructions of a function into a trampoline. It knows the one-byte opcode map (except what is
 * invalid in 64-bit mode, I/O, far transfers and interrupts), the two-byte map's ModRM families
 * (SSE moves and arithmetic, cmovcc, setcc, movzx/movsx, bt*, imul, xadd, cmpxchg, hint nops and
 * endbr64), the 0F 38 and 0F 3A maps, and jcc rel32. Anything else — VEX/EVEX (AVX), syscall, ud2,
 * loop/jrcxz, int3 (another tool's breakpoint) — is reported as unknown, and the caller refuses
 * the function rather than guess. Why not capstone or zydis: see inline_hook.c. */
#include "engine_private.h"

#include <string.h>

#if defined(__x86_64__)

/* Opcodes of the one-byte map that take a ModRM byte (bit set). */
static bool one_byte_has_modrm(uint8_t op) {
  if (op < 0x40) return (op & 7) < 4;                 /* ALU r/m forms: 00-03, 08-0B, … */
  switch (op) {
  case 0x63: case 0x69: case 0x6B:
  case 0x80: case 0x81: case 0x83: case 0x84: case 0x85: case 0x86: case 0x87:
  case 0x88: case 0x89: case 0x8A: case 0x8B: case 0x8C: case 0x8D: case 0x8E: case 0x8F:
  case 0xC0: case 0xC1: case 0xC6: case 0xC7:
  case 0xD0: case 0xD1: case 0xD2: case 0xD3:
  case 0xD8: case 0xD9: case 0xDA: case 0xDB: case 0xDC: case 0xDD: case 0xDE: case 0xDF:
  case 0xF6: case 0xF7: case 0xFE: case 0xFF:
    return true;
  default:
    return false;
  }
}

/* Decodes ModRM (+ SIB + displacement) at `p`; returns its length or 0 past `end`.
 * Sets *rip_disp to the displacement's offset from `p` for RIP-relative operands, else -1. */
static int modrm_length(const uint8_t *p, const uint8_t *end, bool address_size_32, int *rip_disp) {
  *rip_disp = -1;
  if (p >= end) return 0;
  uint8_t modrm = p[0], mod = modrm >> 6, rm = modrm & 7;
  int length = 1;
  if (mod == 3) return length;
  if (rm == 4) {
    if (p + 1 >= end) return 0;
    uint8_t sib = p[1];
    length++;
    if (mod == 0 && (sib & 7) == 5) length += 4; /* no base: disp32, absolute */
  } else if (mod == 0 && rm == 5) {
    if (address_size_32) return -1;           /* EIP-relative: never emitted, not relocated */
    *rip_disp = length;
    length += 4;
  }
  if (mod == 1) length += 1;
  else if (mod == 2) length += 4;
  return length;
}

int eh_x86_decode(const uint8_t *code, size_t available, eh_x86_insn *insn) {
  memset(insn, 0, sizeof *insn);
  insn->rip_disp_offset = -1;
  const uint8_t *p = code, *end = code + (available < 15 ? available : 15);
  bool operand_16 = false, address_32 = false, rex_w = false;

  for (;; p++) { /* legacy prefixes, then at most one REX immediately before the opcode */
    if (p >= end) return -1;
    uint8_t b = *p;
    if (b == 0x66) operand_16 = true;
    else if (b == 0x67) address_32 = true;
    else if (b == 0xF0 || b == 0xF2 || b == 0xF3 || b == 0x2E || b == 0x3E || b == 0x26 || b == 0x36 ||
             b == 0x64 || b == 0x65)
      continue;
    else break;
  }
  if (p < end && (*p & 0xF0) == 0x40) {
    rex_w = (*p & 8) != 0;
    p++;
  }
  if (p >= end) return -1;
  uint8_t op = *p++;
  insn->opcode = op;
  int immediate = 0;
  bool modrm = false;
  int iz = operand_16 ? 2 : 4; /* "z": 16 or 32 bits */

  if (op == 0x0F) {
    if (p >= end) return -1;
    uint8_t op2 = *p++;
    insn->opcode2 = op2;
    if (op2 >= 0x80 && op2 <= 0x8F) { /* jcc rel32 */
      insn->kind = EH_X86_JCC;
      insn->condition = op2 & 0x0F;
      immediate = 4;
    } else if (op2 == 0x38) {
      if (p >= end) return -1;
      p++;
      modrm = true;
    } else if (op2 == 0x3A) {
      if (p >= end) return -1;
      p++;
      modrm = true;
      immediate = 1;
    } else if (op2 >= 0xC8 && op2 <= 0xCF) { /* bswap */
    } else if ((op2 >= 0x10 && op2 <= 0x17) || (op2 >= 0x18 && op2 <= 0x1F) /* hint nops, endbr64 */ ||
               (op2 >= 0x28 && op2 <= 0x2F) || (op2 >= 0x40 && op2 <= 0x6F) || (op2 >= 0x74 && op2 <= 0x76) ||
               op2 == 0x7E || op2 == 0x7F || (op2 >= 0x90 && op2 <= 0x9F) || op2 == 0xA3 || op2 == 0xA5 ||
               op2 == 0xAB || op2 == 0xAD || op2 == 0xAF || op2 == 0xB0 || op2 == 0xB1 || op2 == 0xB3 ||
               (op2 >= 0xB6 && op2 <= 0xB8) || (op2 >= 0xBB && op2 <= 0xC1) || op2 == 0xC3 || op2 == 0xC7 ||
               (op2 >= 0xD0 && op2 != 0xFF) || op2 == 0x0D) {
      modrm = true;
    } else if ((op2 >= 0x70 && op2 <= 0x73) || op2 == 0xA4 || op2 == 0xAC || op2 == 0xBA || op2 == 0xC2 ||
               (op2 >= 0xC4 && op2 <= 0xC6)) {
      modrm = true;
      immediate = 1;
    } else {
      return -1; /* syscall, ud2, cpuid, rdtsc, system instructions, 3DNow!… */
    }
  } else if ((op >= 0x50 && op <= 0x5F) || (op >= 0x90 && op <= 0x99) || op == 0x9B || op == 0x9C ||
             op == 0x9D || op == 0x9E || op == 0x9F || (op >= 0xA4 && op <= 0xA7) || (op >= 0xAA && op <= 0xAF) ||
             op == 0xC9 || op == 0xD7 || op == 0xF5 || (op >= 0xF8 && op <= 0xFD)) {
    /* push/pop reg, nop/xchg, cwde/cdq, pushf/popf, string ops, leave, xlat, flag ops: opcode only */
  } else if (op < 0x40 && (op & 7) == 4) { /* ALU al, imm8 */
    immediate = 1;
  } else if (op < 0x40 && (op & 7) == 5) { /* ALU eax, imm32 */
    immediate = iz;
  } else if (op < 0x40 && (op & 7) < 4) {
    modrm = true;
  } else if (op == 0x68) {
    immediate = iz;
  } else if (op == 0x6A || op == 0xA8 || (op >= 0xB0 && op <= 0xB7)) {
    immediate = 1;
  } else if (op == 0xA9) {
    immediate = iz;
  } else if (op >= 0xB8 && op <= 0xBF) {
    immediate = rex_w ? 8 : iz;
  } else if (op >= 0xA0 && op <= 0xA3) { /* mov moffs: an absolute address */
    immediate = address_32 ? 4 : 8;
  } else if (op >= 0x70 && op <= 0x7F) {
    insn->kind = EH_X86_JCC;
    insn->condition = op & 0x0F;
    immediate = 1;
  } else if (op == 0xE8) {
    insn->kind = EH_X86_CALL;
    immediate = 4;
  } else if (op == 0xE9) {
    insn->kind = EH_X86_JMP;
    immediate = 4;
  } else if (op == 0xEB) {
    insn->kind = EH_X86_JMP;
    immediate = 1;
  } else if (op == 0xC3) {
    insn->kind = EH_X86_RET;
  } else if (op == 0xC2) {
    insn->kind = EH_X86_RET;
    immediate = 2;
  } else if (op == 0xC8) { /* enter imm16, imm8 */
    immediate = 3;
  } else if (one_byte_has_modrm(op)) {
    modrm = true;
    if (op == 0x69 || op == 0x81 || op == 0xC7) immediate = iz;
    else if (op == 0x6B || op == 0x80 || op == 0x83 || op == 0xC0 || op == 0xC1 || op == 0xC6) immediate = 1;
  } else {
    /* invalid in 64-bit mode (06, 27, 60-62, 82, 9A, D4-D6, EA…), VEX/EVEX (C4, C5, 62), I/O,
     * interrupts, int3, hlt, far returns, loop/jrcxz (E0-E3): not relocated. */
    return -1;
  }

  if (modrm) {
    if (p >= end) return -1;
    uint8_t reg = (p[0] >> 3) & 7;
    if (op == 0xF6 && reg < 2) immediate = 1;            /* test r/m8, imm8 */
    if (op == 0xF7 && reg < 2) immediate = iz;           /* test r/m32, imm32 */
    if (op == 0xFF && (reg == 2 || reg == 3)) insn->kind = EH_X86_INDIRECT_CALL;
    if (op == 0xFF && (reg == 4 || reg == 5)) insn->kind = EH_X86_INDIRECT_JMP;
    if (op == 0xFF && reg == 7) return -1;
    int rip_disp;
    int length = modrm_length(p, end, address_32, &rip_disp);
    if (length <= 0) return -1;
    if (rip_disp >= 0) insn->rip_disp_offset = (int8_t)(p - code + rip_disp);
    p += length;
  }
  if (immediate) {
    if (insn->kind == EH_X86_JCC || insn->kind == EH_X86_JMP || insn->kind == EH_X86_CALL)
      insn->branch_offset = (int8_t)(p - code);
    p += immediate;
  }
  if (p > end) return -1;
  insn->length = (uint8_t)(p - code);
  insn->branch_size = (insn->kind == EH_X86_JCC || insn->kind == EH_X86_JMP || insn->kind == EH_X86_CALL) ? (uint8_t)immediate : 0;
  if (insn->branch_size) {
    int64_t displacement = insn->branch_size == 1 ? (int8_t)code[insn->branch_offset]
                                                  : (int32_t)((uint32_t)code[insn->branch_offset] |
                                                              (uint32_t)code[insn->branch_offset + 1] << 8 |
                                                              (uint32_t)code[insn->branch_offset + 2] << 16 |
                                                              (uint32_t)code[insn->branch_offset + 3] << 24);
    insn->target = (uintptr_t)code + insn->length + (uintptr_t)displacement;
  }
  if (insn->rip_disp_offset >= 0) {
    const uint8_t *d = code + insn->rip_disp_offset;
    int32_t displacement = (int32_t)((uint32_t)d[0] | (uint32_t)d[1] << 8 | (uint32_t)d[2] << 16 | (uint32_t)d[3] << 24);
    insn->target = (uintptr_t)code + insn->length + (uintptr_t)(int64_t)displacement;
  }
  return insn->length;
}

#endif
