/* Threads call through the slots of target_add while the main thread rebinds and undoes, over and
 * over: every call must reach a valid function and return one of the values a chain can produce.
 * argv[1]: iterations of rebind/undo (default 2000). */
#include "check.h"
#include "elfhook.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>

int target_add(int a, int b);
int target_add_twice(int a, int b);

#define CALLERS 4

static int (*original[2])(int, int);
static int hook_0(int a, int b) { return original[0](a, b) + 1000; }
static int hook_1(int a, int b) { return original[1](a, b) + 2000; }

static atomic_bool stop;
static atomic_int started;
static atomic_long calls, wrong, hooked;

static void *caller(void *unused) {
  (void)unused;
  atomic_fetch_add(&started, 1);
  while (!atomic_load(&stop)) {
    int value = target_add(1, 2);
    /* 3 (no hook), 1003, 2003, 3003 (both, either order) */
    if (value != 3 && value != 1003 && value != 2003 && value != 3003) atomic_fetch_add(&wrong, 1);
    if (value != 3) atomic_fetch_add(&hooked, 1);
    atomic_fetch_add(&calls, 1);
  }
  return NULL;
}

int main(int argc, char **argv) {
  long iterations = argc > 1 ? atol(argv[1]) : 2000;
  pthread_t threads[CALLERS];
  for (int i = 0; i < CALLERS; i++) pthread_create(&threads[i], NULL, caller, NULL);
  while (atomic_load(&started) < CALLERS) sched_yield();
  struct rebinding first = {"target_add", (void *)hook_0, (void **)&original[0]};
  struct rebinding second = {"target_add", (void *)hook_1, (void **)&original[1]};
  /* 3,000 rounds take ~30 ms: on a loaded machine the callers may get no core while they run. The
   * rounds go on (at most 100 times as many) until a call has gone through a hook. */
  long rounds = 0;
  for (long i = 0; i < iterations || (atomic_load(&hooked) == 0 && i < iterations * 100); i++, rounds++) {
    elfhook_handle *a = NULL, *b = NULL;
    CHECK_OK(elfhook_rebind(&first, 1, NULL, &a));
    CHECK_OK(elfhook_rebind(&second, 1, NULL, &b));
    if (i % 2) {
      CHECK_OK(elfhook_unbind(a));
      CHECK_OK(elfhook_unbind(b));
    } else {
      CHECK_OK(elfhook_unbind(b));
      CHECK_OK(elfhook_unbind(a));
    }
  }
  atomic_store(&stop, true);
  for (int i = 0; i < CALLERS; i++) pthread_join(threads[i], NULL);
  CHECK(atomic_load(&wrong) == 0);
  CHECK(atomic_load(&calls) > 0);
  CHECK(atomic_load(&hooked) > 0); /* the hooks really were in the path, not skipped */
  CHECK(target_add(1, 2) == 3);
  printf("hammer: %ld rebind/undo rounds, %ld calls from %d threads, %ld through hooks (%ld rounds in all)\n",
         iterations, atomic_load(&calls), CALLERS, atomic_load(&hooked), rounds);
  return finish();
}
