/* Threads call inline-hooked functions in a tight loop while the main thread attaches and detaches
 * a chain of two, in both orders, over and over: no crash, and every call returns a value the chain
 * can produce. Three functions: one in a library called from inside it (aligned: one 8-byte
 * store), and two hand-written ones whose patch crosses an 8-byte word (the staged int3 write),
 * one of them with an -O0 frame (two displaced boundaries inside the patch).
 * argv[1]: rounds (default 2000); argv[2]: calling threads (default 3). */
#include "check.h"
#include "elfhook.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

int inline_add(int a, int b);
int inline_add_via_library(int a, int b);
int asm_unaligned(int, int), asm_frame_unaligned(int, int);

#define FUNCTIONS 3
static int (*const functions[FUNCTIONS])(int, int) = {inline_add, asm_unaligned, asm_frame_unaligned};
static int (*const callers[FUNCTIONS])(int, int) = {inline_add_via_library, asm_unaligned, asm_frame_unaligned};
static const int plain[FUNCTIONS] = {3, 4, 5}; /* f(1, 2) unhooked */

static int (*original[FUNCTIONS][2])(int, int);
#define HOOKS(F)                                                                                 \
  static int hook_##F##_0(int a, int b) { return original[F][0](a, b) + 1000; }                \
  static int hook_##F##_1(int a, int b) { return original[F][1](a, b) + 2000; }
HOOKS(0)
HOOKS(1)
HOOKS(2)
static int (*const hooks[FUNCTIONS][2])(int, int) = {
    {hook_0_0, hook_0_1}, {hook_1_0, hook_1_1}, {hook_2_0, hook_2_1}};

static atomic_bool stop;
static atomic_long calls, wrong, hooked;

static void *caller(void *unused) {
  (void)unused;
  while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
    for (int f = 0; f < FUNCTIONS; f++) {
      int value = callers[f](1, 2) - plain[f];
      if (value != 0 && value != 1000 && value != 2000 && value != 3000) atomic_fetch_add(&wrong, 1);
      if (value != 0) atomic_fetch_add_explicit(&hooked, 1, memory_order_relaxed);
      atomic_fetch_add_explicit(&calls, 1, memory_order_relaxed);
    }
  }
  return NULL;
}

int main(int argc, char **argv) {
  long rounds = argc > 1 ? atol(argv[1]) : 2000;
  int threads = argc > 2 ? atoi(argv[2]) : 3;
  pthread_t thread[16];
  if (threads > 16) threads = 16;
  for (int i = 0; i < threads; i++) pthread_create(&thread[i], NULL, caller, NULL);
  for (long i = 0; i < rounds; i++) {
    for (int f = 0; f < FUNCTIONS; f++) {
      elfhook_attachment *a = NULL, *b = NULL;
      CHECK_OK(elfhook_attach((void *)functions[f], (void *)hooks[f][0], (void **)&original[f][0], &a));
      CHECK_OK(elfhook_attach((void *)functions[f], (void *)hooks[f][1], (void **)&original[f][1], &b));
      if (i % 2) {
        CHECK_OK(elfhook_detach(a));
        CHECK_OK(elfhook_detach(b));
      } else {
        CHECK_OK(elfhook_detach(b));
        CHECK_OK(elfhook_detach(a));
      }
    }
  }
  atomic_store(&stop, true);
  for (int i = 0; i < threads; i++) pthread_join(thread[i], NULL);
  CHECK(atomic_load(&wrong) == 0);
  CHECK(atomic_load(&hooked) > 0);
  for (int f = 0; f < FUNCTIONS; f++) CHECK(callers[f](1, 2) == plain[f]);
  printf("inline hammer: %ld attach/detach rounds, %ld calls from %d threads, %ld through hooks, %ld wrong\n",
         rounds, atomic_load(&calls), threads, atomic_load(&hooked), atomic_load(&wrong));
  return finish();
}
