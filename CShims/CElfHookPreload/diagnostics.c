/* The injected library's few words to the user: one line on stderr, written with one write(2). */
#include "elfhook_preload.h"

#include "cnetmonitor.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static void say(bool unmonitored, const char *format, va_list arguments) {
  char line[1024];
  size_t used = (size_t)snprintf(line, sizeof line, "elfhook: ");
  int written = vsnprintf(line + used, sizeof line - used, format, arguments);
  used = written < 0 ? used : used + (size_t)written;
  if (used > sizeof line - 80) used = sizeof line - 80; /* room for the label and the newline */
  if (unmonitored) {
    char name[32];
    cnm_process_name(name, sizeof name);
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
