/* libinline.so: functions that call their own library's functions directly (built with
 * -Wl,-Bsymbolic-functions), so no GOT slot reaches the callee: only an inline hook does. */
static volatile int bias = 7; /* read in inline_scaled's first instructions at -O2: RIP-relative (volatile: not folded to 7) */

static volatile int zero; /* keeps inline_add longer than the patch at -O2 (lea + ret is 4 bytes) */

__attribute__((noipa)) int inline_add(int a, int b) { return a + b + zero; }

__attribute__((noipa)) int inline_scaled(int a) { return a * bias + 1; }

/* The callers: direct calls inside the library. */
int inline_add_via_library(int a, int b) { return inline_add(a, b); }
int inline_scaled_via_library(int a) { return inline_scaled(a); }
