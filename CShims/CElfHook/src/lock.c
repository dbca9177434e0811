/* The engine's one lock, shared by rebinding, undo and the absorption of images loaded later.
 * Recursive, so a filter or visitor that calls back into the engine does not deadlock; taken around
 * fork so the child never inherits it held by a thread that no longer exists. */
#include "engine_private.h"

#include <pthread.h>

static pthread_mutex_t engine_lock = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
static pthread_once_t fork_handlers_once = PTHREAD_ONCE_INIT;

static void lock_for_fork(void) { pthread_mutex_lock(&engine_lock); }
static void unlock_in_parent(void) { pthread_mutex_unlock(&engine_lock); }
/* The child's only thread has a new id, and a recursive mutex refuses to be unlocked by a thread
 * that is not its owner (EPERM): unlocking would leave it held for good, and the child's next fork
 * would deadlock in lock_for_fork. The child starts with a fresh mutex instead. */
static void reset_in_child(void) {
  pthread_mutex_t fresh = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
  engine_lock = fresh;
}
static void install_fork_handlers(void) { pthread_atfork(lock_for_fork, unlock_in_parent, reset_in_child); }

void eh_lock(void) {
  pthread_once(&fork_handlers_once, install_fork_handlers);
  pthread_mutex_lock(&engine_lock);
}

void eh_unlock(void) { pthread_mutex_unlock(&engine_lock); }
