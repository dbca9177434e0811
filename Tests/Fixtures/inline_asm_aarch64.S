/* Hand-written first instructions for the aarch64 relocator: the same functions, with the same
 * results, as inline_asm.S (x86_64), each starting with the instruction class it tests. */
        .text
        .globl asm_rip_load, asm_rip_lea, asm_jcc_early, asm_call_early, asm_short, asm_loop_back
        .globl asm_unknown, asm_unaligned, asm_frame_unaligned, asm_value, asm_parked, asm_int3
        .globl asm_loop_entry, asm_loop_inner, asm_bl_early, asm_tbz_early

/* adrp first: x + 40. */
        .p2align 4
        .type asm_rip_load, @function
asm_rip_load:
        adrp x1, asm_value
        ldr w1, [x1, :lo12:asm_value]
        add w0, w0, w1
        ret
        .size asm_rip_load, . - asm_rip_load

/* ldr literal first: x + 40. */
        .p2align 4
        .type asm_rip_lea, @function
asm_rip_lea:
        ldr w1, 1f
        add w0, w0, w1
        ret
1:      .word 40
        .size asm_rip_lea, . - asm_rip_lea

/* cbz first: x + 1, or -1 for 0. */
        .p2align 4
        .type asm_jcc_early, @function
asm_jcc_early:
        cbz w0, 1f
        add w0, w0, #1
        ret
1:      mov w0, #-1
        ret
        .size asm_jcc_early, . - asm_jcc_early

/* b first (a tail jump): x + 101. */
        .p2align 4
        .type asm_call_early, @function
asm_call_early:
        b 1f
        nop
1:      add w0, w0, #101
        ret
        .size asm_call_early, . - asm_call_early

/* bl first (the return address kept in x9): x + 1 + 100. */
        .p2align 4
        .type asm_bl_early, @function
asm_bl_early:
        mov x9, x30
        bl asm_helper
        mov x30, x9
        add w0, w0, #100
        ret
        .size asm_bl_early, . - asm_bl_early
        .type asm_helper, @function
asm_helper:
        add w0, w0, #1
        ret
        .size asm_helper, . - asm_helper

/* tbz first: x + 1 for even x, x - 1 for odd. */
        .p2align 4
        .type asm_tbz_early, @function
asm_tbz_early:
        tbz w0, #0, 1f
        sub w0, w0, #1
        ret
1:      add w0, w0, #1
        ret
        .size asm_tbz_early, . - asm_tbz_early

/* One instruction: as long as the patch, attachable on aarch64 (x86_64 refuses its asm_short). */
        .p2align 4
        .type asm_short, @function
asm_short:
        mov w0, #0
        .size asm_short, . - asm_short
        ret

/* A branch to itself first (taken for negative x only): refused. 0. */
        .p2align 4
        .type asm_loop_back, @function
asm_loop_back:
1:      tbnz w0, #31, 1b
        mov w0, #0
        ret
        .size asm_loop_back, . - asm_loop_back

/* A SIMD load from a literal: refused (returns x). */
        .p2align 4
        .type asm_unknown, @function
asm_unknown:
        ldr q0, 1f
        ret
        .p2align 4
1:      .quad 0, 0
        .size asm_unknown, . - asm_unknown

/* a + b + 1 */
        .p2align 4
        .type asm_unaligned, @function
asm_unaligned:
        add w0, w0, w1
        add w0, w0, #1
        ret
        .size asm_unaligned, . - asm_unaligned

/* a + 2b, with a frame */
        .p2align 4
        .type asm_frame_unaligned, @function
asm_frame_unaligned:
        stp x29, x30, [sp, #-16]!
        mov x29, sp
        add w0, w0, w1, lsl #1
        ldp x29, x30, [sp], #16
        ret
        .size asm_frame_unaligned, . - asm_frame_unaligned

/* x + 5; asm_parked + 4 too (a thread resumed after the displaced instruction). */
        .p2align 4
        .type asm_parked, @function
asm_parked:
        mov w1, #0
        add w0, w0, #5
        ret
        .size asm_parked, . - asm_parked

        .p2align 4
        .type asm_int3, @function
asm_int3:
        ret
        .size asm_int3, . - asm_int3

/* A loop whose head is the entry, its branch back in the body: refused when the size is known. */
        .p2align 4
        .type asm_loop_entry, @function
asm_loop_entry:
1:      add w1, w1, #1
        subs w0, w0, #1
        b.ne 1b
        ret
        .size asm_loop_entry, . - asm_loop_entry

/* A loop whose head is past the displaced instruction: attachable on aarch64. x. */
        .p2align 4
        .type asm_loop_inner, @function
asm_loop_inner:
        mov w1, #0
1:      add w1, w1, #1
        subs w0, w0, #1
        b.ne 1b
        mov w0, w1
        ret
        .size asm_loop_inner, . - asm_loop_inner

        .data
        .p2align 2
        .type asm_value, @object
asm_value:
        .word 40
        .size asm_value, 4
        .section .note.GNU-stack,"",@progbits
