/* The injected library's few words to the user: one line on stderr, written with one write(2). */
#include "elfhook_preload.h"

#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* /proc/self/comm without its newline; empty when it cannot be read. */
static void process_name(char *name, size_t size) {
  name[0] = 0;
  int fd = open("/proc/self/comm", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  ssize_t count = read(fd, name, size - 1);
  close(fd);
  if (count <= 0) count = 0;
  name[count] = 0;
  if (count > 0 && name[count - 1] == '\n') name[count - 1] = 0;
}

static void say(bool unmonitored, const char *format, va_list arguments) {
  char line[1024];
  size_t used = (size_t)snprintf(line, sizeof line, "elfhook: ");
  int written = vsnprintf(line + used, sizeof line - used, format, arguments);
  used = written < 0 ? used : used + (size_t)written;
  if (used > sizeof line - 80) used = sizeof line - 80; /* room for the label and the newline */
  if (unmonitored) {
    char name[32];
    process_name(name, sizeof name);
    used += (size_t)snprintf(line + used, sizeof line - used, "; %s[%d] runs unmonitored", name, (int)getpid());
  }
  line[used++] = '\n';
  ssize_t ignored = write(STDERR_FILENO, line, used);
  (void)ignored;
}

void elfhook_say_unmonitored(const char *format, ...) {
  va_list arguments;
  va_start(arguments, format);
  say(true, format, arguments);
  va_end(arguments);
}

void elfhook_say(const char *format, ...) {
  va_list arguments;
  va_start(arguments, format);
  say(false, format, arguments);
  va_end(arguments);
}
