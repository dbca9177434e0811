/* The inline hook's contract, from a C program linked with -lCElfHook, in every build variant
 * (-O0/-O2, PIE/non-PIE, -fno-plt, -fcf-protection). argv[1] == "stripped": this is a copy made
 * with strip --strip-all, whose static functions must not be found. */
#define _GNU_SOURCE
#include "check.h"
#include "elfhook.h"

#include <signal.h>
#include <string.h>

int inline_add(int a, int b);
int inline_scaled(int a);
int inline_add_via_library(int a, int b);
int inline_scaled_via_library(int a);
int asm_rip_load(int), asm_rip_lea(int), asm_jcc_early(int), asm_call_early(int), asm_short(void);
int asm_loop_back(int), asm_unknown(int), asm_unaligned(int, int), asm_frame_unaligned(int, int);
int asm_parked(int), asm_loop_entry(int), asm_loop_inner(int);
#if defined(__aarch64__)
int asm_bl_early(int), asm_tbz_early(int);
#endif
void asm_int3(void);

static volatile sig_atomic_t own_traps;
static void on_own_trap(int signal) { (void)signal; own_traps++; }

/* A function of the executable, called directly from main. */
__attribute__((noipa)) int main_mul(int a, int b) { return a * b; }

/* A local function: in .symtab only (not exported), gone from a stripped copy. */
static __attribute__((noipa)) int secret_double(int x) { return 2 * x + 1; }

/* Every function reaches its original through one of these. */
static int (*original_add)(int, int), (*original_add_2)(int, int), (*original_mul)(int, int);
static int (*original_scaled)(int), (*original_secret)(int), (*original_one)(int);
static int (*original_two)(int, int);

static int hook_add(int a, int b) { return original_add(a, b) + 1000; }
static int hook_add_2(int a, int b) { return original_add_2(a, b) + 2000; }
static int hook_mul(int a, int b) { return original_mul(a, b) + 1; }
static int hook_scaled(int a) { return original_scaled(a) + 500; }
static int hook_secret(int x) { return original_secret(x) + 100; }
static int hook_one(int x) { return original_one(x) + 10000; }
static int hook_two(int a, int b) { return original_two(a, b) + 10000; }

static unsigned char saved[16];
static void save(void *function) { memcpy(saved, function, sizeof saved); }
static int unchanged(void *function) { return memcmp(saved, function, sizeof saved) == 0; }

/* Attach, check the hook and the original, detach, check the bytes: for a one-int function. */
static void round_trip_one(const char *name, int (*function)(int), int argument, int expected) {
  elfhook_attachment *attachment = NULL;
  save((void *)function);
  int status = elfhook_attach((void *)function, (void *)hook_one, (void **)&original_one, &attachment);
  if (status != 0) fprintf(stderr, "%s: %s: %s\n", name, elfhook_status_name(status), elfhook_last_error());
  CHECK(status == 0);
  if (status) return;
  CHECK(!unchanged((void *)function));
  CHECK(function(argument) == expected + 10000);
  CHECK(original_one(argument) == expected);
  CHECK_OK(elfhook_detach(attachment));
  CHECK(unchanged((void *)function));
  CHECK(function(argument) == expected);
}

static void refused(const char *name, void *function, int expected_status, const char *text) {
  save(function);
  elfhook_attachment *attachment = NULL;
  int status = elfhook_attach(function, (void *)hook_one, (void **)&original_one, &attachment);
  if (status != expected_status)
    fprintf(stderr, "%s: expected %s, got %s: %s\n", name, elfhook_status_name(expected_status),
            elfhook_status_name(status), elfhook_last_error());
  CHECK(status == expected_status);
  CHECK(attachment == NULL);
  CHECK(strstr(elfhook_last_error(), text) != NULL);
  CHECK(unchanged(function)); /* refused: byte for byte as it was */
  printf("%s refused: %s\n", name, elfhook_last_error());
}

int main(int argc, char **argv) {
  int stripped = argc > 1 && strcmp(argv[1], "stripped") == 0;
  signal(SIGTRAP, on_own_trap);

  /* A library function called from inside its library. */
  CHECK(inline_add_via_library(2, 3) == 5);
  elfhook_attachment *first = NULL, *second = NULL;
  save((void *)inline_add_via_library); /* not the hooked one: must stay as it is */
  CHECK_OK(elfhook_attach_symbol("libinline.so", "inline_add", (void *)hook_add, (void **)&original_add, &first));
  CHECK(unchanged((void *)inline_add_via_library));
  CHECK(inline_add_via_library(2, 3) == 1005);
  CHECK(original_add(2, 3) == 5);

  /* A chain of two: the newest runs first, its original is the first hook. */
  CHECK_OK(elfhook_attach_symbol("*/libinline.so", "inline_add", (void *)hook_add_2, (void **)&original_add_2, &second));
  CHECK(inline_add_via_library(2, 3) == 3005);
  CHECK(original_add_2 == hook_add);
  /* Detach the lower one first: the chain is mended. */
  CHECK_OK(elfhook_detach(first));
  CHECK(inline_add_via_library(2, 3) == 2005);
  CHECK_OK(elfhook_detach(second));
  CHECK(inline_add_via_library(2, 3) == 5);
  CHECK(elfhook_detach(second) == ELFHOOK_ERR_UNKNOWN_HANDLE);
  /* And in the other order. */
  CHECK_OK(elfhook_attach_symbol(NULL, "inline_add", (void *)hook_add, (void **)&original_add, &first));
  CHECK_OK(elfhook_attach_symbol(NULL, "inline_add", (void *)hook_add_2, (void **)&original_add_2, &second));
  CHECK_OK(elfhook_detach(second));
  CHECK(inline_add_via_library(2, 3) == 1005);
  CHECK_OK(elfhook_detach(first));
  CHECK(inline_add_via_library(2, 3) == 5);

  /* A RIP-relative operand in the first instructions (a static variable read). */
  elfhook_attachment *scaled = NULL;
  save((void *)inline_scaled);
  CHECK_OK(elfhook_attach((void *)inline_scaled, (void *)hook_scaled, (void **)&original_scaled, &scaled));
  CHECK(inline_scaled_via_library(3) == 22 + 500);
  CHECK(original_scaled(3) == 22);
  CHECK_OK(elfhook_detach(scaled));
  CHECK(unchanged((void *)inline_scaled));
  CHECK(inline_scaled_via_library(3) == 22);

  /* A function of the executable, called directly. */
  elfhook_attachment *mul = NULL;
  save((void *)main_mul);
  CHECK_OK(elfhook_attach((void *)main_mul, (void *)hook_mul, (void **)&original_mul, &mul));
  CHECK(main_mul(6, 7) == 43);
  CHECK_OK(elfhook_detach(mul));
  CHECK(unchanged((void *)main_mul));
  CHECK(main_mul(6, 7) == 42);

  /* A static function, by name from the executable's .symtab — or "not found" once stripped. */
  elfhook_attachment *secret = NULL;
  int status = elfhook_attach_symbol(NULL, "secret_double", (void *)hook_secret, (void **)&original_secret, &secret);
  if (stripped) {
    CHECK(status == ELFHOOK_ERR_SYMBOL_NOT_FOUND);
    CHECK(strstr(elfhook_last_error(), "secret_double") != NULL);
    printf("stripped: %s\n", elfhook_last_error());
  } else {
    CHECK(status == 0);
    if (status) fprintf(stderr, "secret_double: %s\n", elfhook_last_error());
    CHECK(secret_double(20) == 141);
    CHECK(original_secret(20) == 41);
    CHECK_OK(elfhook_detach(secret));
    CHECK(secret_double(20) == 41);
  }
  CHECK(elfhook_attach_symbol(NULL, "no_such_function_anywhere", (void *)hook_one, NULL, NULL) ==
        ELFHOOK_ERR_SYMBOL_NOT_FOUND);
  CHECK(strstr(elfhook_last_error(), "no_such_function_anywhere") != NULL);
  CHECK(elfhook_attach_symbol("libnothing*", "inline_add", (void *)hook_one, NULL, NULL) == ELFHOOK_ERR_SYMBOL_NOT_FOUND);

  /* The same questions asked of the file, without attaching (elfhook inspect --function). */
  elfhook_function_info info;
  status = elfhook_inspect_function("/proc/self/exe", "secret_double", &info);
  if (stripped) {
    CHECK(status == ELFHOOK_ERR_SYMBOL_NOT_FOUND);
  } else {
    CHECK(status == 0 && !info.in_dynsym && info.is_local && info.attachable == 0 && info.size > 0);
  }
  if (!stripped) {
    CHECK(elfhook_inspect_function("/proc/self/exe", "asm_unknown", &info) == 0);
    CHECK(info.attachable == ELFHOOK_ERR_UNKNOWN_INSTRUCTION && strstr(info.reason, "asm_unknown") != NULL);
    CHECK(elfhook_inspect_function("/proc/self/exe", "asm_loop_entry", &info) == 0);
    CHECK(info.attachable == ELFHOOK_ERR_JUMP_INTO_PATCH);
  }
  CHECK(elfhook_inspect_function("/proc/self/exe", "main_mul", &info) == (stripped ? ELFHOOK_ERR_SYMBOL_NOT_FOUND : 0));
  CHECK(elfhook_inspect_function("/etc/passwd", "main_mul", &info) == ELFHOOK_ERR_MALFORMED_IMAGE);

  /* Hand-written prologues that relocate. */
  round_trip_one("asm_rip_load", asm_rip_load, 2, 42);
  round_trip_one("asm_rip_lea", asm_rip_lea, 2, 42);
  round_trip_one("asm_jcc_early", asm_jcc_early, 4, 5);
  round_trip_one("asm_jcc_early(0)", asm_jcc_early, 0, -1);
  round_trip_one("asm_call_early", asm_call_early, 1, 102);
#if defined(__aarch64__)
  round_trip_one("asm_bl_early", asm_bl_early, 1, 102);
  round_trip_one("asm_tbz_early", asm_tbz_early, 4, 5);
  round_trip_one("asm_tbz_early(3)", asm_tbz_early, 3, 2);
  round_trip_one("asm_loop_inner", asm_loop_inner, 3, 3); /* its loop's head is past the patch */
#endif
  elfhook_attachment *two = NULL;
  save((void *)asm_unaligned);
  CHECK_OK(elfhook_attach((void *)asm_unaligned, (void *)hook_two, (void **)&original_two, &two));
  CHECK(asm_unaligned(1, 2) == 10004);
  CHECK_OK(elfhook_detach(two));
  CHECK(unchanged((void *)asm_unaligned) && asm_unaligned(1, 2) == 4);
  save((void *)asm_frame_unaligned);
  CHECK_OK(elfhook_attach((void *)asm_frame_unaligned, (void *)hook_two, (void **)&original_two, &two));
  CHECK(asm_frame_unaligned(1, 2) == 10005);
  CHECK_OK(elfhook_detach(two));
  CHECK(unchanged((void *)asm_frame_unaligned) && asm_frame_unaligned(1, 2) == 5);

  /* Threads stopped between the displaced instructions before the patch: they resume on a trap
   * byte and continue in the trampoline. */
  CHECK_OK(elfhook_attach((void *)asm_parked, (void *)hook_one, (void **)&original_one, &two));
  CHECK(asm_parked(1) == 10006);
#if defined(__x86_64__)
  for (int offset = 2; offset <= 4; offset += 2) {
#else
  for (int offset = 4; offset <= 4; offset += 4) { /* past the one displaced instruction */
#endif
    int (*resumed)(int) = (int (*)(int))((char *)asm_parked + offset);
    CHECK(resumed(1) == 6);
  }
  CHECK_OK(elfhook_detach(two));
  CHECK(asm_parked(1) == 6);

  /* The program's own SIGTRAP handler (installed first thing in main) still gets the traps that
   * are not the engine's. */
  asm_int3();
  raise(SIGTRAP);
#if defined(__x86_64__)
  CHECK(own_traps == 2);
#else
  CHECK(own_traps == 1); /* asm_int3 is only a ret there */
#endif

  /* And those that must be refused, left as they were. */
#if defined(__x86_64__)
  refused("asm_short", (void *)asm_short, ELFHOOK_ERR_FUNCTION_TOO_SHORT, "the 5");
#endif
  refused("asm_loop_back", (void *)asm_loop_back, ELFHOOK_ERR_JUMP_INTO_PATCH, "goes back to +0");
  if (!stripped) { /* the sweep of the body needs the function's size, from .symtab */
    refused("asm_loop_entry", (void *)asm_loop_entry, ELFHOOK_ERR_JUMP_INTO_PATCH, "the jump at +8 goes back to +0");
#if defined(__x86_64__)
    refused("asm_loop_inner", (void *)asm_loop_inner, ELFHOOK_ERR_JUMP_INTO_PATCH, "the jump at +7 goes back to +2");
#endif
    CHECK(asm_loop_inner(3) == 3);
  }
#if defined(__x86_64__)
  refused("asm_unknown", (void *)asm_unknown, ELFHOOK_ERR_UNKNOWN_INSTRUCTION, "byte 0xc5");
#else
  refused("asm_unknown", (void *)asm_unknown, ELFHOOK_ERR_UNKNOWN_INSTRUCTION, "a SIMD load from a literal");
#endif
  CHECK(asm_short() == 0 && asm_loop_back(3) == 0 && asm_unknown(9) == 9);
  CHECK(elfhook_attach(NULL, (void *)hook_one, NULL, NULL) == ELFHOOK_ERR_INVALID_ARGUMENT);
  return finish();
}
