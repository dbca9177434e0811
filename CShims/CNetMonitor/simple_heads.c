/* The two HTTP/1.1 heads the hooks record an exchange from by themselves (see cnetmonitor.h):
 * a GET request that is its head alone, and a response framed by its Content-Length.
 *
 * Both parsers accept a strict subset of what the Swift parser (HTTPStreamParser) reads, and
 * only heads it reads to the same record fields: CRLF line ends, header names of letters, digits
 * and `-`, values of field text, no obsolete line folding. Anything else (another method or
 * version, a header that frames a request body or changes the connection, a 1xx, 204 or 304
 * response, a head longer than CNM_SIMPLE_HEAD_CAPACITY) is refused, and the Swift path parses
 * the call as before. Refusing is always safe; accepting what Swift would read otherwise is not,
 * so every doubt refuses. Nothing here allocates, locks or touches errno. */
#include <string.h>

#include "cnetmonitor.h"

/* The end of the field text (visible bytes, SP, HTAB, obs-text) at `from`. */
static size_t field_text_end(const unsigned char *bytes, size_t from, size_t count) {
  size_t index = from;
  for (;;) {
    index = cnm_text_end(bytes, index, count, 0x20);
    if (index == count || bytes[index] != '\t') return index;
    index++;
  }
}

/* Whether the `length` name bytes at `name` are `lower` (lower-case letters and `-`), in any case.
 * Name bytes are letters, digits and `-`: setting 0x20 lowers a letter and keeps the others. */
static bool name_is(const unsigned char *name, size_t length, const char *lower, size_t lower_length) {
  if (length != lower_length) return false;
  for (size_t index = 0; index < length; index++) {
    if ((name[index] | 0x20) != (unsigned char)lower[index]) return false;
  }
  return true;
}
#define NAME_IS(name, length, literal) name_is(name, length, literal, sizeof literal - 1)

/* One header line of a head: its name [start, name_end), its value [value_start, value_end)
 * without surrounding SP or HTAB, and where the next line starts. */
typedef struct header_line {
  size_t name_end, value_start, value_end, next;
} header_line;

/* The header line at `start`, when it is one these parsers read: a name of letters, digits and
 * `-`, a colon, field text, CRLF. */
static bool read_header_line(const unsigned char *bytes, size_t start, size_t count, header_line *line) {
  size_t name_end = cnm_name_bytes_end(bytes, start, count);
  if (name_end == start || name_end == count || bytes[name_end] != ':') return false;
  size_t end = field_text_end(bytes, name_end + 1, count);
  if (end + 2 > count || bytes[end] != '\r' || bytes[end + 1] != '\n') return false;
  size_t value_start = name_end + 1, value_end = end;
  while (value_start < value_end && (bytes[value_start] == ' ' || bytes[value_start] == '\t')) value_start++;
  while (value_end > value_start && (bytes[value_end - 1] == ' ' || bytes[value_end - 1] == '\t')) value_end--;
  *line = (header_line){name_end, value_start, value_end, end + 2};
  return true;
}

/* A `Connection` value these parsers accept: `keep-alive` alone (what nginx answers with, and what
 * a browser asks). `close`, `upgrade` or a list changes what follows on the connection. */
static bool is_keep_alive(const unsigned char *bytes, const header_line *line) {
  return NAME_IS(bytes + line->value_start, line->value_end - line->value_start, "keep-alive");
}

bool cnm_parse_simple_request(const unsigned char *bytes, size_t count, cnm_simple_request *request) {
  static const char version[] = " HTTP/1.1\r\n";
  if (count > CNM_SIMPLE_HEAD_CAPACITY || count < 4 || memcmp(bytes, "GET ", 4) != 0) return false;
  size_t target_end = cnm_text_end(bytes, 4, count, 0x21); /* what the Swift parser takes as target */
  if (target_end == 4 || count - target_end < sizeof version - 1 + 2) return false;
  if (memcmp(bytes + target_end, version, sizeof version - 1) != 0) return false;
  cnm_simple_request parsed = {.length = (uint16_t)count, .target_length = (uint16_t)(target_end - 4)};
  size_t at = target_end + sizeof version - 1;
  while (bytes[at] != '\r') {
    header_line line;
    if (!read_header_line(bytes, at, count, &line)) return false;
    const unsigned char *name = bytes + at;
    size_t name_length = line.name_end - at, value_length = line.value_end - line.value_start;
    if (NAME_IS(name, name_length, "host")) {
      /* The first Host wins in the Swift parser, unless it was empty: one non-empty Host only. */
      if (parsed.host_offset || value_length == 0 || value_length > CNM_SIMPLE_HOST_CAPACITY) return false;
      parsed.host_offset = (uint16_t)line.value_start;
      parsed.host_length = (uint16_t)value_length;
    } else if (NAME_IS(name, name_length, "connection")) {
      if (!is_keep_alive(bytes, &line)) return false;
      parsed.keep_alive = 1;
    } else if (NAME_IS(name, name_length, "content-length") || NAME_IS(name, name_length, "transfer-encoding")) {
      return false; /* a request body */
    }
    at = line.next;
    if (at == count) return false;
  }
  /* The blank line ends the head, and the head is all the call carried. */
  if (at + 2 != count || bytes[at + 1] != '\n') return false;
  *request = parsed;
  return true;
}

bool cnm_parse_simple_response(const unsigned char *bytes, size_t available, cnm_simple_response *response) {
  size_t count = available < CNM_SIMPLE_HEAD_CAPACITY ? available : CNM_SIMPLE_HEAD_CAPACITY;
  if (count < 17 || memcmp(bytes, "HTTP/1.1 ", 9) != 0) return false;
  unsigned hundreds = bytes[9] - '0', tens = bytes[10] - '0', ones = bytes[11] - '0';
  /* A final response with a body: not 1xx, 204 or 304. */
  if (hundreds < 2 || hundreds > 9 || tens > 9 || ones > 9 || bytes[12] != ' ') return false;
  uint16_t status = (uint16_t)(hundreds * 100 + tens * 10 + ones);
  if (status == 204 || status == 304) return false;
  size_t reason_end = field_text_end(bytes, 13, count);
  if (reason_end + 2 > count || bytes[reason_end] != '\r' || bytes[reason_end + 1] != '\n') return false;
  cnm_simple_response parsed = {.status = status};
  bool framed = false;
  size_t at = reason_end + 2;
  while (at < count && bytes[at] != '\r') {
    header_line line;
    if (!read_header_line(bytes, at, count, &line)) return false;
    const unsigned char *name = bytes + at;
    size_t name_length = line.name_end - at;
    if (NAME_IS(name, name_length, "content-length")) {
      /* One value of digits: 18 of them stay below the Swift parser's limit (2^62). */
      size_t digits = line.value_end - line.value_start;
      if (framed || digits == 0 || digits > 18) return false;
      uint64_t value = 0;
      for (size_t index = line.value_start; index < line.value_end; index++) {
        unsigned digit = bytes[index] - '0';
        if (digit > 9) return false;
        value = value * 10 + digit;
      }
      parsed.content_length = value;
      framed = true;
    } else if (NAME_IS(name, name_length, "transfer-encoding")) {
      return false;
    } else if (NAME_IS(name, name_length, "connection")) {
      if (!is_keep_alive(bytes, &line)) return false;
    }
    at = line.next;
  }
  if (!framed || at + 2 > count || bytes[at + 1] != '\n') return false;
  parsed.length = (uint16_t)(at + 2);
  *response = parsed;
  return true;
}
