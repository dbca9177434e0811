/* What an inline hook costs (scripts/bench-inline):
 *   inline_cost plain|hooked|chained ROUNDS — ROUNDS direct calls to a function of this program,
 *     unhooked, through one pass-through attachment (hook → original → trampoline → function), or
 *     through two; callgrind counts the instructions, the script takes the difference of two round
 *     counts so that start-up cancels out;
 *   inline_cost attach ROUNDS — µs for the first attach + detach of a function (its prologue
 *     decoded, its size read from this program's .symtab, a stub placed, the trampoline written),
 *     then per attach + detach (the patch written and restored each time; the trampoline reused). */
#include "elfhook.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static volatile int zero;
__attribute__((noipa)) int target(int a, int b) { return a + b + zero; }

static int (*original_1)(int, int), (*original_2)(int, int);
static int hook_1(int a, int b) { return original_1(a, b); }
static int hook_2(int a, int b) { return original_2(a, b); }

static double now_us(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

int main(int argc, char **argv) {
  if (argc < 3) return 2;
  const char *mode = argv[1];
  long rounds = atol(argv[2]);
  if (strcmp(mode, "attach") == 0) {
    double first = now_us();
    elfhook_attachment *cold = NULL;
    if (elfhook_attach((void *)target, (void *)hook_1, (void **)&original_1, &cold) != 0 || elfhook_detach(cold) != 0)
      return 1;
    printf("first_attach_detach_us=%.1f\n", now_us() - first);
    double start = now_us();
    for (long i = 0; i < rounds; i++) {
      elfhook_attachment *attachment = NULL;
      if (elfhook_attach((void *)target, (void *)hook_1, (void **)&original_1, &attachment) != 0 ||
          elfhook_detach(attachment) != 0) {
        fprintf(stderr, "%s\n", elfhook_last_error());
        return 1;
      }
    }
    printf("attach_detach_us=%.1f\n", (now_us() - start) / (double)rounds);
    return 0;
  }
  if (strcmp(mode, "hooked") == 0 || strcmp(mode, "chained") == 0) {
    if (elfhook_attach((void *)target, (void *)hook_1, (void **)&original_1, NULL) != 0) return 1;
    if (strcmp(mode, "chained") == 0 && elfhook_attach((void *)target, (void *)hook_2, (void **)&original_2, NULL) != 0)
      return 1;
  }
  long sum = 0;
  for (long i = 0; i < rounds; i++) sum += target((int)i, 1);
  printf("sum=%ld\n", sum);
  return 0;
}
