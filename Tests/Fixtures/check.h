/* A tiny self-checking harness for the fixture programs: each CHECK prints what failed and where;
 * the program exits non-zero when any failed and prints "fixture passed: N checks" otherwise. */
#ifndef FIXTURE_CHECK_H
#define FIXTURE_CHECK_H
#include <stdio.h>
#include <stdlib.h>

static int checks_run, checks_failed;

#define CHECK(condition)                                                                       \
  do {                                                                                         \
    checks_run++;                                                                              \
    if (!(condition)) {                                                                        \
      checks_failed++;                                                                         \
      fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #condition);           \
    }                                                                                          \
  } while (0)

#define CHECK_OK(call)                                                                         \
  do {                                                                                         \
    int status_ = (call);                                                                      \
    checks_run++;                                                                              \
    if (status_ != 0) {                                                                        \
      checks_failed++;                                                                         \
      fprintf(stderr, "%s:%d: %s returned %s: %s\n", __FILE__, __LINE__, #call,                \
              elfhook_status_name(status_), elfhook_last_error());                            \
    }                                                                                          \
  } while (0)

static int finish(void) {
  if (checks_failed) {
    fprintf(stderr, "fixture FAILED: %d of %d checks\n", checks_failed, checks_run);
    return 1;
  }
  printf("fixture passed: %d checks\n", checks_run);
  return 0;
}
#endif
