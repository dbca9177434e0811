/* process_control.h — what `elfhook run` asks of the kernel that Swift cannot call (prctl is
 * variadic). */
#ifndef ELFHOOK_PROCESS_CONTROL_H
#define ELFHOOK_PROCESS_CONTROL_H

/* Makes this process the "child subreaper" of its descendants: one orphaned by its parent's exit
 * becomes this process's child instead of init's, so that `elfhook run` can wait for the processes
 * a command left running, and reap them. Returns 0, or -1 with errno set. */
int elfhook_adopt_orphans(void);

#endif
