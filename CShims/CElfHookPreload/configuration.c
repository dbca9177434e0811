/* The ELFHOOK_* variables of an injected process (elfhook_preload.h). Every problem is one line
 * naming the variable and what it accepts; the process then runs unmonitored. */
#include "elfhook_preload.h"
#include "cnetmonitor.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/vfs.h>
#include <unistd.h>

enum { DEFAULT_CAPACITY = 4096, MIN_CAPACITY = 64, MAX_CAPACITY = 1 << 20 };

static bool is_set(const char *value) { return value && value[0]; }

static bool parse_log(const char *value, elfhook_log_level *level) {
  if (!is_set(value) || strcmp(value, "error") == 0) *level = ELFHOOK_LOG_ERROR;
  else if (strcmp(value, "off") == 0) *level = ELFHOOK_LOG_OFF;
  else if (strcmp(value, "info") == 0) *level = ELFHOOK_LOG_INFO;
  else return false;
  return true;
}

/* A power of two in [MIN_CAPACITY, MAX_CAPACITY], written in decimal digits only. */
static bool parse_capacity(const char *value, size_t *capacity) {
  if (!is_set(value)) {
    *capacity = DEFAULT_CAPACITY;
    return true;
  }
  size_t count = 0;
  for (const char *c = value; *c; c++) {
    if (*c < '0' || *c > '9' || count > MAX_CAPACITY) return false;
    count = count * 10 + (size_t)(*c - '0');
  }
  if (count < MIN_CAPACITY || count > MAX_CAPACITY || (count & (count - 1)) != 0) return false;
  *capacity = count;
  return true;
}

/* The directory part of `pattern` in `directory` (PATH_MAX bytes); false when it is too long. */
static bool output_directory(const char *pattern, char directory[PATH_MAX]) {
  const char *slash = strrchr(pattern, '/');
  if (!slash) strcpy(directory, ".");
  else if (slash == pattern) strcpy(directory, "/");
  else if ((size_t)(slash - pattern) < PATH_MAX) {
    memcpy(directory, pattern, (size_t)(slash - pattern));
    directory[slash - pattern] = 0;
  } else {
    return false;
  }
  return true;
}

/* The directory the rings go to must exist and be writable: checked now, so that a wrong
 * ELFHOOK_OUTPUT is reported when the process starts, not at its first connection. A directory
 * part with a pattern in it is left to the ring's creation. */
static bool check_output_directory(const char *pattern, char *problem, size_t size) {
  char directory[PATH_MAX];
  int error = ENAMETOOLONG;
  if (output_directory(pattern, directory)) {
    if (strchr(directory, '%') || access(directory, W_OK | X_OK) == 0) return true;
    error = errno;
  }
  /* Named as the ring would have been, with this process's pid. */
  char path[PATH_MAX];
  const char *named = cnm_expand_pattern(pattern, (int)getpid(), path, sizeof path) ? path : pattern;
  snprintf(problem, size, "cannot create the record file %s: %s", named, strerror(error));
  return false;
}

/* statfs(2)'s f_type of the memory filesystems (linux/magic.h). */
enum { TMPFS_FILESYSTEM = 0x01021994, RAMFS_FILESYSTEM = (int)0x858458f6 };

void elfhook_note_output_filesystem(const elfhook_preload_configuration *configuration) {
  static bool said;
  if (configuration->log == ELFHOOK_LOG_OFF || __atomic_exchange_n(&said, true, __ATOMIC_RELAXED)) return;
  char directory[PATH_MAX];
  struct statfs filesystem;
  if (!output_directory(configuration->output, directory) || strchr(directory, '%') ||
      statfs(directory, &filesystem) != 0)
    return;
  if ((int)filesystem.f_type == TMPFS_FILESYSTEM || (int)filesystem.f_type == RAMFS_FILESYSTEM) return;
  elfhook_say("the record file is in %s, on a disk filesystem: each process pays ~2 ms more for its record ring "
              "there than under /dev/shm (set ELFHOOK_OUTPUT=/dev/shm/...; ELFHOOK_LOG=off hides this line)",
              directory);
}

bool elfhook_run_is_over(const elfhook_preload_configuration *configuration) {
  char directory[PATH_MAX];
  return configuration->run_owned && output_directory(configuration->output, directory) &&
         access(directory, F_OK) != 0 && errno == ENOENT;
}

elfhook_configuration_status elfhook_read_configuration(elfhook_preload_configuration *configuration, char *problem,
                                                        size_t size) {
  const char *log = getenv("ELFHOOK_LOG");
  configuration->log = ELFHOOK_LOG_ERROR;
  if (!parse_log(log, &configuration->log)) {
    snprintf(problem, size, "ELFHOOK_LOG must be one of off, error, info, not '%s'", log);
    return ELFHOOK_INVALID;
  }
  const char *disable = getenv("ELFHOOK_DISABLE");
  if (is_set(disable) && strcmp(disable, "0") != 0) {
    if (strcmp(disable, "1") == 0) return ELFHOOK_DISABLED;
    snprintf(problem, size, "ELFHOOK_DISABLE must be 1 or 0, not '%s'", disable);
    return ELFHOOK_INVALID;
  }
  const char *output = getenv("ELFHOOK_OUTPUT");
  if (!is_set(output)) {
    snprintf(problem, size,
             "ELFHOOK_OUTPUT is not set (run the command with `elfhook run`, or set it to a file such as "
             "/tmp/records/%%p.ring)");
    return ELFHOOK_INVALID;
  }
  if (strlen(output) >= sizeof configuration->output) {
    snprintf(problem, size, "ELFHOOK_OUTPUT is longer than %zu bytes", sizeof configuration->output - 1);
    return ELFHOOK_INVALID;
  }
  strcpy(configuration->output, output);
  const char *capacity = getenv("ELFHOOK_BUFFER_RECORDS");
  if (!parse_capacity(capacity, &configuration->capacity)) {
    snprintf(problem, size, "ELFHOOK_BUFFER_RECORDS must be a power of two from %d to %d, not '%s'", MIN_CAPACITY,
             MAX_CAPACITY, capacity);
    return ELFHOOK_INVALID;
  }
  const char *light = getenv("ELFHOOK_LIGHT_CLIENTS");
  configuration->light_clients = true;
  if (is_set(light) && strcmp(light, "1") != 0) {
    if (strcmp(light, "0") != 0) {
      snprintf(problem, size, "ELFHOOK_LIGHT_CLIENTS must be 1 or 0, not '%s'", light);
      return ELFHOOK_INVALID;
    }
    configuration->light_clients = false;
  }
  const char *run = getenv("ELFHOOK_RUN");
  configuration->run_owned = is_set(run) && strcmp(run, "1") == 0;
  if (elfhook_run_is_over(configuration)) return ELFHOOK_DISABLED;
  if (!check_output_directory(configuration->output, problem, size)) {
    /* The run may have ended, and removed its directory, since the look above. */
    return elfhook_run_is_over(configuration) ? ELFHOOK_DISABLED : ELFHOOK_INVALID;
  }
  return ELFHOOK_CONFIGURED;
}
