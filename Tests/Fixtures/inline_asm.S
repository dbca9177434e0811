/* Hand-written prologues for the inline hook's decoder and relocator (x86_64, AT&T syntax). */
        .text
        .globl asm_rip_load, asm_rip_lea, asm_jcc_early, asm_call_early, asm_short, asm_loop_back
        .globl asm_unknown, asm_unaligned, asm_frame_unaligned, asm_value, asm_parked, asm_int3
        .globl asm_loop_entry, asm_loop_inner

/* mov eax, [rip + asm_value]: a RIP-relative load displaced on its own (6 bytes). */
        .p2align 4
        .type asm_rip_load, @function
asm_rip_load:
        movl asm_value(%rip), %eax
        addl %edi, %eax
        ret
        .size asm_rip_load, . - asm_rip_load

/* lea rax, [rip + asm_value] (7 bytes), then a load through it. */
        .p2align 4
        .type asm_rip_lea, @function
asm_rip_lea:
        leaq asm_value(%rip), %rax
        movl (%rax), %eax
        addl %edi, %eax
        ret
        .size asm_rip_lea, . - asm_rip_lea

/* test; jz rel8 forward (out of the displaced bytes): the jcc is rewritten as jcc rel32. */
        .p2align 4
        .type asm_jcc_early, @function
asm_jcc_early:
        testl %edi, %edi
        jz 1f
        leal 1(%rdi), %eax
        ret
1:      movl $-1, %eax
        ret
        .size asm_jcc_early, . - asm_jcc_early

/* push rbx; call rel32: the call is relocated, its return address is in the trampoline. */
        .p2align 4
        .type asm_call_early, @function
asm_call_early:
        pushq %rbx
        call asm_helper
        popq %rbx
        addl $100, %eax
        ret
        .size asm_call_early, . - asm_call_early
        .type asm_helper, @function
asm_helper:
        leal 1(%rdi), %eax
        ret
        .size asm_helper, . - asm_helper

/* 3 bytes: shorter than the patch. */
        .p2align 4
        .type asm_short, @function
asm_short:
        xorl %eax, %eax
        ret
        .size asm_short, . - asm_short
        nop; nop; nop; nop; nop; nop; nop; nop

/* A loop whose jump goes back into the first bytes: refused. */
        .p2align 4
        .type asm_loop_back, @function
asm_loop_back:
1:      decl %edi
        jnz 1b
        movl %edi, %eax
        ret
        .size asm_loop_back, . - asm_loop_back

/* A loop whose head is the entry, its jump back past the displaced bytes: found by the sweep of
 * the body (the symbol's size is known), refused. */
        .p2align 4
        .type asm_loop_entry, @function
asm_loop_entry:
1:      addl $1, %eax
        addl $2, %eax
        decl %edi
        jnz 1b
        ret
        .size asm_loop_entry, . - asm_loop_entry

/* The same with the head on a displaced boundary (+2). */
        .p2align 4
        .type asm_loop_inner, @function
asm_loop_inner:
        xorl %eax, %eax
1:      addl $1, %eax
        decl %edi
        jnz 1b
        ret
        .size asm_loop_inner, . - asm_loop_inner

/* An AVX instruction first: the decoder does not know VEX, so the function is refused. */
        .p2align 4
        .type asm_unknown, @function
asm_unknown:
        vpxor %xmm0, %xmm0, %xmm0
        movl %edi, %eax
        ret
        .size asm_unknown, . - asm_unknown

/* At 5 mod 8: the 5 patched bytes cross an 8-byte word, so the staged (int3) write is used.
 * lea eax,[rdi+rsi] (3) then add eax, 1 (3): one displaced boundary at +3. */
        .p2align 4
        nop; nop; nop; nop; nop
        .type asm_unaligned, @function
asm_unaligned:
        leal (%rdi,%rsi), %eax
        addl $1, %eax
        ret
        .size asm_unaligned, . - asm_unaligned

/* An -O0 frame at 6 mod 8 (staged write), boundaries at +1 and +4: push rbp; mov rbp, rsp. */
        .p2align 4
        nop; nop; nop; nop; nop; nop
        .type asm_frame_unaligned, @function
asm_frame_unaligned:
        pushq %rbp
        movq %rsp, %rbp
        leal (%rdi,%rsi,2), %eax
        popq %rbp
        ret
        .size asm_frame_unaligned, . - asm_frame_unaligned

/* Displaced boundaries at +2 and +4, each instruction from there on independent of the ones
 * before: calling asm_parked + 2 or + 4 is what a thread stopped there before the patch does when
 * it resumes. Both must land on a trap byte and be moved into the trampoline: x + 5 either way. */
        .p2align 4
        .type asm_parked, @function
asm_parked:
        xorl %eax, %eax
        xorl %ecx, %ecx
        leal 5(%rdi), %eax
        ret
        .size asm_parked, . - asm_parked

/* A breakpoint that is not the engine's: its SIGTRAP must reach the program's own handler. */
        .p2align 4
        .type asm_int3, @function
asm_int3:
        int3
        ret
        .size asm_int3, . - asm_int3

        .data
        .p2align 2
        .type asm_value, @object
asm_value:
        .long 40
        .size asm_value, 4
        .section .note.GNU-stack,"",@progbits
