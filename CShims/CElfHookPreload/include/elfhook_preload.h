/* elfhook_preload.h — libElfHookPreload.so, what LD_PRELOAD injects: a small C library that starts
 * the monitor when the process first needs it.
 *
 * Loading a Swift runtime (and the C++ runtime it needs) and parsing every loaded image costs a
 * process ~3 ms at start, which most processes of a run — shells, `curl --version`, compilers —
 * never repay. So nothing is started before main: the constructor reads the ELFHOOK_* variables
 * and reports a bad one, and the library exports the calls a network transaction begins with
 * (connect, accept, accept4, getaddrinfo), which the dynamic linker binds to it ahead of libc. The
 * first internet connect or accept (IPv4, IPv6: a unix socket's never makes a record) loads the
 * monitor (libElfHookMonitor.so, beside this library), whose engine rewrites the GOT slots of every
 * image, and then goes through the monitor's hook: from then
 * on the process's calls reach the monitor's hooks through their GOT slots, never through here.
 * Lookups before that are recorded here, in C, without loading the monitor. A process that changes
 * its user id or its root directory (setuid and family, chroot: also exported) starts the monitor
 * just before. */
#ifndef ELFHOOK_PRELOAD_H
#define ELFHOOK_PRELOAD_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cnm_records.h"

/* ---- configuration (configuration.c) ---------------------------------------------------------- */

typedef enum { ELFHOOK_LOG_OFF = 0, ELFHOOK_LOG_ERROR = 1, ELFHOOK_LOG_INFO = 2 } elfhook_log_level;

/* What the ELFHOOK_* variables ask for (ARCHITECTURE.md, "Environment of an injected process"). */
typedef struct elfhook_preload_configuration {
  /* ELFHOOK_OUTPUT: the record ring pattern, "%p" for the pid. A copy: programs that set their
   * process title (nginx) write over the environment's memory after start. */
  char output[PATH_MAX];
  size_t capacity;    /* ELFHOOK_BUFFER_RECORDS: records a ring holds (default 4096) */
  elfhook_log_level log; /* ELFHOOK_LOG: off, error (the default), info */
  /* ELFHOOK_RUN=1, set by `elfhook run`: the output directory is the run's, removed when the run
   * ends. A process still running then (a daemon the command left, which the run stopped waiting
   * for) runs unmonitored without a word: see elfhook_run_is_over. */
  bool run_owned;
} elfhook_preload_configuration;

typedef enum {
  ELFHOOK_CONFIGURED, /* monitor the process */
  ELFHOOK_DISABLED,   /* ELFHOOK_DISABLE=1 */
  ELFHOOK_INVALID,    /* `problem` says which variable is wrong */
} elfhook_configuration_status;

/* Reads the environment. On ELFHOOK_INVALID, `problem` (of `size` bytes) says why, and
 * `configuration->log` holds the level to report it at. A process started after its `elfhook run`
 * ended is ELFHOOK_DISABLED. */
elfhook_configuration_status elfhook_read_configuration(elfhook_preload_configuration *configuration, char *problem,
                                                        size_t size);
/* Whether the output directory belongs to an `elfhook run` that has ended (and removed it). */
bool elfhook_run_is_over(const elfhook_preload_configuration *configuration);
/* Says once per process (a fork child inherits the "said"), when the ring is about to be created,
 * if its directory is not on a memory filesystem
 * (tmpfs, ramfs): a ring on a disk filesystem costs ~2 ms at each process's first record against
 * ~0.1 ms under /dev/shm (BENCHMARKS.md). Silent with ELFHOOK_LOG=off. One statfs(2). */
void elfhook_note_output_filesystem(const elfhook_preload_configuration *configuration);

/* ---- diagnostics (diagnostics.c) -------------------------------------------------------------- */

/* One line on stderr, "elfhook: MESSAGE; NAME[PID] runs unmonitored", in one write(2): nothing of the
 * host's stdio is touched. */
void elfhook_say_unmonitored(const char *format, ...) __attribute__((format(printf, 1, 2)));
/* One line on stderr, "elfhook: MESSAGE". */
void elfhook_say(const char *format, ...) __attribute__((format(printf, 1, 2)));

/* ---- the calls that start the monitor (forwarders.c) ------------------------------------------- */

/* One exported function: its own address, the definition it forwards to (the next in the lookup
 * order: libc's), and the monitor's hook for the name once the monitor runs. */
typedef struct elfhook_forwarder {
  const char *name;
  void *self;
  void *next;
  void *hook;
} elfhook_forwarder;

/* Arms the forwarders: the first call through one of them starts the monitor. */
void elfhook_arm(const elfhook_preload_configuration *configuration);

/* ---- name lookups before the monitor is loaded (lookups.c) ---------------------------------------- */

/* Records a getaddrinfo call into the process's ring (created at the first one), and keeps it for
 * the monitor. */
void elfhook_record_lookup(const elfhook_preload_configuration *configuration, const char *host, int status,
                           int system_errno, const struct addrinfo *answers, uint64_t start_unix_ns,
                           uint64_t duration_ns);
/* Fills `handoff`'s ring (or NULL: no lookup made one) and the latest lookups. */
void elfhook_lookups_handoff(cnm_handoff *handoff);
/* The monitor took the ring: from now on it is the monitor's. */
void elfhook_lookups_handed_over(void);
/* In a fork child: the parent's ring is not the child's; the child creates its own when it needs one. */
void elfhook_lookups_after_fork_in_child(void);

/* ---- the monitor (monitor_loading.c) ------------------------------------------------------------ */

/* Remembers where the monitor library is: beside this one. Returns false (and says why, at `log`)
 * when this library's own path cannot be found. Called by the constructor, before the working directory can
 * change. */
bool elfhook_locate_monitor(elfhook_log_level log);

/* Loads libElfHookMonitor.so, starts it recording as `configuration` says, and fills each
 * forwarder's hook. Returns false, having said why at `configuration->log`, when the process must
 * run unmonitored. */
bool elfhook_load_monitor(const elfhook_preload_configuration *configuration, elfhook_forwarder *forwarders,
                          size_t count);

/* Whether `return_address` is in the monitor library: a call from the monitor's hook to its original,
 * which is still the forwarder while the monitor starts (the hooks are in place before
 * elfhook_monitor_adopt makes their originals libc's). */
bool elfhook_called_from_monitor(const void *return_address);

/* The monitor's entry points (Sources/ElfHookMonitor/MonitorEntry.swift). */
typedef int (*elfhook_monitor_start_function)(const cnm_handoff *handoff);
typedef void *(*elfhook_monitor_adopt_function)(const char *name, void *forwarder, void *next);

#endif
