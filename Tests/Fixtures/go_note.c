/* A C program that carries the note Go's linker puts in every program it makes (owner "Go",
 * type 4: its build ID), in a PT_NOTE segment as Go's: what tells `elfhook run` that a command
 * is a Go program, whose system calls do not go through the C library. Prints a line and exits 3. */
#include <stdio.h>

__asm__(".section .note.go.buildid,\"a\",%note\n"
        ".balign 4\n"
        ".long 4\n"  /* n_namesz: "Go" and two NULs, as Go writes it */
        ".long 8\n"  /* n_descsz */
        ".long 4\n"  /* n_type: ELF_NOTE_GOBUILDID_TAG */
        ".ascii \"Go\\0\\0\"\n"
        ".ascii \"buildid!\"\n"
        ".previous\n");

int main(void) {
  puts("go-like hello");
  return 3;
}
