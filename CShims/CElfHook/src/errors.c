/* Status names and per-thread error text. Per-thread so two threads that rebind at once each read
 * their own failure (plthook's single process-wide buffer is the mistake this avoids). */
#include "engine_private.h"

#include <stdio.h>
#include <string.h>

static __thread char error_text[ELFHOOK_ERROR_CAPACITY];

const char *elfhook_status_name(int status) {
  switch (status) {
  case ELFHOOK_OK: return "ELFHOOK_OK";
  case ELFHOOK_ERR_INVALID_ARGUMENT: return "ELFHOOK_ERR_INVALID_ARGUMENT";
  case ELFHOOK_ERR_NO_MEMORY: return "ELFHOOK_ERR_NO_MEMORY";
  case ELFHOOK_ERR_IMAGE_NOT_FOUND: return "ELFHOOK_ERR_IMAGE_NOT_FOUND";
  case ELFHOOK_ERR_MALFORMED_IMAGE: return "ELFHOOK_ERR_MALFORMED_IMAGE";
  case ELFHOOK_ERR_PROTECTION: return "ELFHOOK_ERR_PROTECTION";
  case ELFHOOK_ERR_UNRESOLVED: return "ELFHOOK_ERR_UNRESOLVED";
  case ELFHOOK_ERR_UNKNOWN_HANDLE: return "ELFHOOK_ERR_UNKNOWN_HANDLE";
  case ELFHOOK_ERR_SYMBOL_NOT_FOUND: return "ELFHOOK_ERR_SYMBOL_NOT_FOUND";
  case ELFHOOK_ERR_UNKNOWN_INSTRUCTION: return "ELFHOOK_ERR_UNKNOWN_INSTRUCTION";
  case ELFHOOK_ERR_FUNCTION_TOO_SHORT: return "ELFHOOK_ERR_FUNCTION_TOO_SHORT";
  case ELFHOOK_ERR_JUMP_INTO_PATCH: return "ELFHOOK_ERR_JUMP_INTO_PATCH";
  case ELFHOOK_ERR_OUT_OF_RANGE: return "ELFHOOK_ERR_OUT_OF_RANGE";
  default: return "ELFHOOK_ERR_UNKNOWN_STATUS";
  }
}

const char *elfhook_last_error(void) { return error_text; }

void elfhook_clear_error(void) { error_text[0] = '\0'; }

int elfhook_set_error(int status, const char *format, ...) {
  va_list arguments;
  va_start(arguments, format);
  vsnprintf(error_text, sizeof error_text, format, arguments);
  va_end(arguments);
  return status;
}

void elfhook_append_error(const char *format, ...) {
  size_t used = strlen(error_text);
  if (used + 3 >= sizeof error_text) return;
  if (used > 0) {
    memcpy(error_text + used, "; ", 3);
    used += 2;
  }
  va_list arguments;
  va_start(arguments, format);
  vsnprintf(error_text + used, sizeof error_text - used, format, arguments);
  va_end(arguments);
}
