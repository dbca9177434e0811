/* libtarget.so: the library whose functions the fixtures rebind, and which itself imports libc. */
#include <string.h>

int target_add(int a, int b) { return a + b; }

/* A call from inside a library to libc: rebinding strlen must reach it. */
size_t target_length(const char *text) { return strlen(text); }

/* A call from inside the library to its own exported (preemptible) function: a JUMP_SLOT of its own. */
int target_add_twice(int a, int b) { return target_add(target_add(a, b), b); }

int target_mul(int a, int b) { return a * b; }

/* libtarget's own call to target_mul, for image filters. */
int target_mul_via_library(int a, int b) { return target_mul(a, b); }
