/* The two HTTP/1.x heads the hooks record an exchange from by themselves (cnm_simple_heads.h):
 * an HTTP/1.1 or 1.0 request of any method but CONNECT, without a body or with one its
 * Content-Length or chunked coding frames, and a final response with at most one Content-Length or a `Transfer-Encoding: chunked` (which
 * frames its body, unless it answers HEAD or is a 204 or 304: exchange_replay.c decides).
 *
 * Both parsers accept a strict subset of what the Swift parser (HTTPStreamParser) reads, and
 * only heads it reads to the same record fields: CRLF line ends, header names of letters, digits
 * and `-`, values of field text, no obsolete line folding. Anything else (CONNECT, a method with
 * `-` or `_`, a request version but 1.1 and 1.0, a target over 512 bytes, a Transfer-Encoding but
 * `chunked`, a Content-Length that is not one number, a Connection that is not `keep-alive` or
 * `close` alone (`upgrade` changes what follows on the connection), a 1xx response, a head longer
 * than CNM_SIMPLE_HEAD_CAPACITY) is refused, and the Swift path parses
 * the call as before. Refusing is always safe; accepting what Swift would read otherwise is not,
 * so every doubt refuses.
 *
 * A head read alone (a connection's first) is read in one pass that maps its control bytes
 * (below 0x20, or DEL: CR, LF, HTAB and what no head may hold), 16 bytes at a time; each line
 * then costs one vector for its name, a lookup of its next control byte, and, for the four names
 * that matter, a compare of a few words. A head read after the last one on its connection is
 * compared with it line by line, 16 bytes at a time: only the lines that differ are read (a
 * server's Date, Content-Length and ETag; a client's target and a header or two), and what the
 * others said is the last head's, moved to where they are now. Nothing here allocates, locks or
 * touches errno. */
#include "cnm_simple_heads.h"

#include <string.h>

#include "cnm_http_scan.h"

/* ---- the control bytes of a head -------------------------------------------------------------- */

/* Bit i % 64 of word i / 64 is set when byte `origin` + i is a control byte. Words past the
 * head's last byte are never read. */
typedef struct control_map {
  size_t origin;
  uint64_t words[CNM_SIMPLE_HEAD_CAPACITY / 64];
} control_map;

/* The control bytes among the 16 at `bytes`: bit i for byte i. */
static inline uint64_t controls16(const unsigned char *bytes) {
#if defined(__SSE2__)
  return cnm_text_misses(_mm_loadu_si128((const __m128i *)bytes), 0x20);
#else
  uint64_t bits = 0;
  for (unsigned index = 0; index < 16; index++) bits |= (uint64_t)(bytes[index] < 0x20 || bytes[index] == 0x7F) << index;
  return bits;
#endif
}

/* Maps the control bytes from `origin` to `count` of the bytes at `bytes` (origin < count,
 * 16 ≤ count ≤ CNM_SIMPLE_HEAD_CAPACITY). */
static void map_controls(const unsigned char *bytes, size_t origin, size_t count, control_map *map) {
  map->origin = origin;
  size_t index = origin;
  for (; index + 64 <= count; index += 64) {
    map->words[(index - origin) / 64] = controls16(bytes + index) | controls16(bytes + index + 16) << 16 |
                                        controls16(bytes + index + 32) << 32 | controls16(bytes + index + 48) << 48;
  }
  if (index == count) return;
  uint64_t word = 0;
  size_t chunk = index;
  for (; chunk + 16 <= count; chunk += 16) word |= controls16(bytes + chunk) << (chunk - index);
  /* The last bytes, in the 16 that end at `count`: the bits of those before `chunk` are in. */
  if (chunk < count) word |= controls16(bytes + count - 16) >> (16 - (count - chunk)) << (chunk - index);
  map->words[(index - origin) / 64] = word;
}

/* The first control byte at or after `from` (≥ the map's origin), or `count` when there is none. */
static inline size_t next_control(const control_map *map, size_t from, size_t count) {
  if (from >= count) return count;
  size_t relative = from - map->origin, word = relative / 64;
  uint64_t bits = map->words[word] & (~(uint64_t)0 << (relative % 64));
  while (!bits) {
    if (map->origin + ++word * 64 >= count) return count;
    bits = map->words[word];
  }
  size_t at = map->origin + word * 64 + (size_t)__builtin_ctzll(bits);
  return at < count ? at : count;
}

/* The end of the field text (visible bytes, SP, HTAB, obs-text) at `from`: its first control
 * byte that is not HTAB. */
static inline size_t field_text_end(const unsigned char *bytes, const control_map *map, size_t from, size_t count) {
  size_t end = next_control(map, from, count);
  while (end < count && bytes[end] == '\t') end = next_control(map, end + 1, count);
  return end;
}

/* The same, without a map: for a line read alone, vectors from `from`. */
static inline size_t field_text_end_scanned(const unsigned char *bytes, size_t from, size_t count) {
  size_t end = cnm_text_end(bytes, from, count, 0x20);
  while (end < count && bytes[end] == '\t') end = cnm_text_end(bytes, end + 1, count, 0x20);
  return end;
}

/* The end of the header name at `start`: its first byte that is not a letter, digit or `-`. One
 * vector for the names of up to 15 bytes that nearly every header has. */
static inline size_t name_end(const unsigned char *bytes, size_t start, size_t count) {
#if defined(__SSE2__)
  if (count - start >= 16) {
    unsigned misses = cnm_name_misses(_mm_loadu_si128((const __m128i *)(bytes + start)));
    if (misses) return start + (size_t)__builtin_ctz(misses);
  }
#endif
  return cnm_name_bytes_end(bytes, start, count);
}

/* ---- header lines ----------------------------------------------------------------------------- */

/* Whether the `length` name bytes at `name` are `lower` (lower-case letters and `-`), in any
 * case, compared a word at a time (the last word overlapping the one before). Name bytes are
 * letters, digits and `-`: setting 0x20 lowers a letter and keeps the others. */
static inline bool name_is(const unsigned char *name, const char *lower, size_t length) {
  if (length < 8) {
    uint32_t have, want, last, last_want;
    memcpy(&have, name, 4), memcpy(&want, lower, 4);
    memcpy(&last, name + length - 4, 4), memcpy(&last_want, lower + length - 4, 4);
    return (have | 0x20202020u) == want && (last | 0x20202020u) == last_want;
  }
  for (size_t offset = 0;; offset += 8) {
    size_t at = offset + 8 <= length ? offset : length - 8;
    uint64_t have, want;
    memcpy(&have, name + at, 8), memcpy(&want, lower + at, 8);
    if ((have | 0x2020202020202020u) != want) return false;
    if (at + 8 == length) return true;
  }
}

/* The headers these parsers read; any other is only checked to be a well-formed line. */
typedef enum header_name { OTHER, HOST, CONNECTION, CONTENT_LENGTH, TRANSFER_ENCODING } header_name;

/* The header named by the `length` bytes at `name`: told by the length first, as most names have
 * none of these four lengths. */
static inline header_name header_named(const unsigned char *name, size_t length) {
  switch (length) {
  case 4: return name_is(name, "host", 4) ? HOST : OTHER;
  case 10: return name_is(name, "connection", 10) ? CONNECTION : OTHER;
  case 14: return name_is(name, "content-length", 14) ? CONTENT_LENGTH : OTHER;
  case 17: return name_is(name, "transfer-encoding", 17) ? TRANSFER_ENCODING : OTHER;
  default: return OTHER;
  }
}

/* One header line of a head: its name, its value's bytes after the colon up to the CR, and where
 * the next line starts. */
typedef struct header_line {
  header_name name;
  size_t value_start, value_end, next;
} header_line;

/* The header line at `start`, when it is one these parsers read: a name of letters, digits and
 * `-`, a colon, field text, CRLF. Its end found in `map`, or without one (NULL). */
static inline __attribute__((always_inline)) bool read_header_line(const unsigned char *bytes, const control_map *map,
                                                                   size_t start, size_t count, header_line *line) {
  size_t colon = name_end(bytes, start, count);
  if (colon == start || colon == count || bytes[colon] != ':') return false;
  size_t end = map ? field_text_end(bytes, map, colon + 1, count) : field_text_end_scanned(bytes, colon + 1, count);
  if (end + 2 > count || bytes[end] != '\r' || bytes[end + 1] != '\n') return false;
  *line = (header_line){header_named(bytes + start, colon - start), colon + 1, end, end + 2};
  return true;
}

/* A header value without the SP and HTAB around it (what the Swift parser reads of one). */
static inline void trim(const unsigned char *bytes, header_line *line) {
  while (line->value_start < line->value_end && (bytes[line->value_start] == ' ' || bytes[line->value_start] == '\t'))
    line->value_start++;
  while (line->value_end > line->value_start && (bytes[line->value_end - 1] == ' ' || bytes[line->value_end - 1] == '\t'))
    line->value_end--;
}

/* What a `Connection` value these parsers accept says (CNM_CONNECTION_KEEP_ALIVE: what nginx
 * answers with, and what a browser asks; CNM_CONNECTION_CLOSE: what Python's urllib asks, and a
 * server answers a last request with), or CNM_CONNECTION_UNSAID for any other value: `upgrade`, a
 * list, another option. */
static inline uint8_t connection_option(const unsigned char *bytes, header_line *line) {
  trim(bytes, line);
  size_t length = line->value_end - line->value_start;
  if (length == 10 && name_is(bytes + line->value_start, "keep-alive", 10)) return CNM_CONNECTION_KEEP_ALIVE;
  if (length == 5 && name_is(bytes + line->value_start, "close", 5)) return CNM_CONNECTION_CLOSE;
  return CNM_CONNECTION_UNSAID;
}

/* ---- what a header line says ---------------------------------------------------------------- */

/* One Content-Length value of digits, trimmed, into `value`: false when it is empty, not all
 * digits, or longer than 18 of them (which stay below the Swift parser's limit, 2^62). */
static inline bool content_length_value(const unsigned char *bytes, header_line *line, uint64_t *value) {
  trim(bytes, line);
  size_t digits = line->value_end - line->value_start;
  if (digits == 0 || digits > 18) return false;
  uint64_t number = 0;
  for (size_t index = line->value_start; index < line->value_end; index++) {
    unsigned digit = bytes[index] - '0';
    if (digit > 9) return false;
    number = number * 10 + digit;
  }
  *value = number;
  return true;
}

/* Whether a Transfer-Encoding value is `chunked` alone, in any case, trimmed. */
static inline bool is_chunked(const unsigned char *bytes, header_line *line) {
  trim(bytes, line);
  return line->value_end - line->value_start == 7 && name_is(bytes + line->value_start, "chunked", 7);
}

/* What a Content-Length or Transfer-Encoding line says of the body, added to `framing`: false for
 * a second one, a Content-Length that is not one number, a Transfer-Encoding but `chunked` alone. */
static inline bool take_framing_header(const unsigned char *bytes, header_line *line, cnm_simple_framing *framing) {
  if (line->name == CONTENT_LENGTH) {
    if (framing->framed_at || !content_length_value(bytes, line, &framing->content_length)) return false;
    framing->framed_at = (uint16_t)line->next;
  } else {
    if (framing->chunked_at || !is_chunked(bytes, line)) return false;
    framing->chunked_at = (uint16_t)line->next;
  }
  return true;
}

/* What a request's header line says, added to `parsed`: false when the request is not one these
 * parsers read (a Transfer-Encoding but `chunked` alone or a second one, a second Content-Length,
 * a Connection but keep-alive or close, a second Host or Connection). */
static inline bool take_request_header(const unsigned char *bytes, header_line *line, cnm_simple_request *parsed) {
  switch (line->name) {
  case HOST: {
    /* The first Host wins in the Swift parser, unless it was empty: one non-empty Host only. */
    trim(bytes, line);
    size_t length = line->value_end - line->value_start;
    if (parsed->host_offset || length == 0 || length > CNM_SIMPLE_HOST_CAPACITY) return false;
    parsed->host_offset = (uint16_t)line->value_start;
    parsed->host_length = (uint16_t)length;
    return true;
  }
  case CONNECTION:
    if (parsed->connection) return false;
    parsed->connection = connection_option(bytes, line);
    parsed->connection_at = (uint16_t)line->value_start;
    return parsed->connection != CNM_CONNECTION_UNSAID;
  case CONTENT_LENGTH:
  case TRANSFER_ENCODING:
    return take_framing_header(bytes, line, &parsed->framing);
  default:
    return true;
  }
}

/* What a response's header line says, added to `parsed`: false when the response is not one these
 * parsers read (a second or malformed Content-Length, a Transfer-Encoding but `chunked` alone or a
 * second one, a Connection but keep-alive or close). */
static inline bool take_response_header(const unsigned char *bytes, header_line *line, cnm_simple_response *parsed) {
  switch (line->name) {
  case CONTENT_LENGTH:
  case TRANSFER_ENCODING:
    return take_framing_header(bytes, line, &parsed->framing);
  case CONNECTION:
    return connection_option(bytes, line) != CNM_CONNECTION_UNSAID;
  default:
    return true;
  }
}

/* What the header lines the last head had from `old_at` to `old_end` said of its body's framing,
 * in this head from `at`: they are the same bytes, so only where they are differs. False when
 * they say again what a line read in this head said (a second Content-Length or
 * Transfer-Encoding). `framed_at` is where the line after the Content-Length line begins,
 * `chunked_at` the same for Transfer-Encoding's. */
static inline bool take_framing_again(const cnm_simple_framing *last, size_t old_at, size_t old_end, size_t at,
                                      cnm_simple_framing *parsed) {
  if (last->framed_at > old_at && last->framed_at <= old_end) {
    if (parsed->framed_at) return false;
    parsed->framed_at = (uint16_t)(last->framed_at - old_at + at);
    parsed->content_length = last->content_length;
  }
  if (last->chunked_at > old_at && last->chunked_at <= old_end) {
    if (parsed->chunked_at) return false;
    parsed->chunked_at = (uint16_t)(last->chunked_at - old_at + at);
  }
  return true;
}

/* The same for all that a request's lines said (a second Host or Connection: false too). */
static inline bool take_request_lines_again(const cnm_simple_request *last, size_t old_at, size_t old_end, size_t at,
                                            cnm_simple_request *parsed) {
  if (last->host_offset >= old_at && last->host_offset < old_end) {
    if (parsed->host_offset) return false;
    parsed->host_offset = (uint16_t)(last->host_offset - old_at + at);
    parsed->host_length = last->host_length;
  }
  if (last->connection && last->connection_at >= old_at && last->connection_at < old_end) {
    if (parsed->connection) return false;
    parsed->connection = last->connection;
    parsed->connection_at = (uint16_t)(last->connection_at - old_at + at);
  }
  return take_framing_again(&last->framing, old_at, old_end, at, &parsed->framing);
}

/* A message framed both ways (Transfer-Encoding then wins, RFC 9112 §6.3) is not simple. */
static inline bool framed_once(const cnm_simple_framing *framing) { return !(framing->framed_at && framing->chunked_at); }

/* ---- the heads -------------------------------------------------------------------------------- */

/* The length of the method and its space that begin the `count` bytes at `bytes` (8 at least),
 * when it is one these parsers read: GET, POST, PUT and HEAD told at once, any other of capital
 * letters alone (DELETE, WebDAV's PROPFIND, a cache's PURGE), at most CNM_SIMPLE_METHOD_CAPACITY
 * of them. 0 when it is not: CONNECT, whose answer starts a tunnel, and a method with `-` or `_`
 * (which the Swift parser reads too, but no client sends over TCP). */
static inline size_t method_and_space(const unsigned char *bytes, size_t count) {
  if (memcmp(bytes, "GET ", 4) == 0) return 4;
  if (memcmp(bytes, "POST ", 5) == 0) return 5;
  if (memcmp(bytes, "PUT ", 4) == 0) return 4;
  if (memcmp(bytes, "HEAD ", 5) == 0) return 5;
  size_t length = 0;
  while (length < CNM_SIMPLE_METHOD_CAPACITY && length < count && (unsigned)(bytes[length] - 'A') < 26u) length++;
  if (length == 0 || length == count || bytes[length] != ' ') return 0;
  return length == 7 && memcmp(bytes, "CONNECT", 7) == 0 ? 0 : length + 1;
}

/* The length of the request line `METHOD target HTTP/1.1` (or `HTTP/1.0`) CRLF that begins the
 * `count` bytes at `bytes` (at most CNM_SIMPLE_HEAD_CAPACITY), its method's length in `method` and
 * its minor version in `minor`; 0 when they begin with no request line these parsers read. */
static inline __attribute__((always_inline)) size_t request_line_length(const unsigned char *bytes, size_t count,
                                                                         uint8_t *method, uint8_t *minor) {
  static const char version[] = " HTTP/1.1\r\n";
  size_t target_start = count >= 8 ? method_and_space(bytes, count) : 0;
  if (!target_start) return 0;
  size_t target_end = cnm_text_end(bytes, target_start, count, 0x21); /* what the Swift parser takes as target */
  if (target_end == target_start || target_end - target_start > CNM_SIMPLE_TARGET_CAPACITY ||
      count - target_end < sizeof version - 1 + 2)
    return 0;
  /* ` HTTP/1.` then `1` or `0`, then CRLF. */
  const unsigned char *line_end = bytes + target_end;
  if (memcmp(line_end, version, 8) != 0 || (line_end[8] != '1' && line_end[8] != '0') || line_end[9] != '\r' ||
      line_end[10] != '\n')
    return 0;
  *method = (uint8_t)(target_start - 1);
  *minor = (uint8_t)(line_end[8] - '0');
  return target_end + sizeof version - 1;
}

/* A request's fields before its header lines: its method's and target's lengths, from the length
 * of its request line, and its minor version. */
static inline cnm_simple_request request_line_fields(uint8_t method, size_t line, uint8_t minor) {
  return (cnm_simple_request){
      .method_length = method, .target_length = (uint16_t)(line - method - 1 - 11), .minor_version = minor};
}

bool cnm_simple_head_ends(const unsigned char *bytes, size_t from, size_t count) {
  /* Each LF (libc's memchr: a line a call), and the three bytes before it. */
  for (const unsigned char *at = bytes + from, *end = bytes + count; (at = memchr(at, '\n', (size_t)(end - at))); at++)
    if (at - bytes >= 3 && at[-1] == '\r' && at[-2] == '\n' && at[-3] == '\r') return true;
  return false;
}

bool cnm_simple_request_begins(const unsigned char *bytes, size_t count) {
  return count >= 8 && count < CNM_SIMPLE_HEAD_CAPACITY && method_and_space(bytes, count) &&
         !cnm_simple_head_ends(bytes, 0, count);
}

bool cnm_parse_simple_request(const unsigned char *bytes, size_t available, cnm_simple_request *request) {
  size_t count = available < CNM_SIMPLE_HEAD_CAPACITY ? available : CNM_SIMPLE_HEAD_CAPACITY;
  uint8_t method, minor;
  size_t at = request_line_length(bytes, count, &method, &minor);
  if (!at) return false;
  cnm_simple_request parsed = request_line_fields(method, at, minor);
  control_map map;
  map_controls(bytes, at, count, &map);
  while (bytes[at] != '\r') {
    header_line line;
    if (!read_header_line(bytes, &map, at, count, &line) || !take_request_header(bytes, &line, &parsed)) return false;
    at = line.next;
    if (at == count) return false;
  }
  /* The blank line ends the head (its body, if any, follows). */
  if (at + 2 > count || bytes[at + 1] != '\n' || !framed_once(&parsed.framing)) return false;
  parsed.length = (uint16_t)(at + 2);
  *request = parsed;
  return true;
}

bool cnm_parse_simple_response(const unsigned char *bytes, size_t available, cnm_simple_response *response) {
  size_t count = available < CNM_SIMPLE_HEAD_CAPACITY ? available : CNM_SIMPLE_HEAD_CAPACITY;
  if (count < 17 || memcmp(bytes, "HTTP/1.", 7) != 0 || (bytes[7] != '1' && bytes[7] != '0') || bytes[8] != ' ')
    return false;
  unsigned hundreds = bytes[9] - '0', tens = bytes[10] - '0', ones = bytes[11] - '0';
  /* A final response: not 1xx. */
  if (hundreds < 2 || hundreds > 9 || tens > 9 || ones > 9 || bytes[12] != ' ') return false;
  uint16_t status = (uint16_t)(hundreds * 100 + tens * 10 + ones);
  control_map map;
  map_controls(bytes, 0, count, &map);
  size_t reason_end = field_text_end(bytes, &map, 13, count);
  if (reason_end + 2 > count || bytes[reason_end] != '\r' || bytes[reason_end + 1] != '\n') return false;
  cnm_simple_response parsed = {.status = status};
  size_t at = reason_end + 2;
  while (at < count && bytes[at] != '\r') {
    header_line line;
    if (!read_header_line(bytes, &map, at, count, &line) || !take_response_header(bytes, &line, &parsed)) return false;
    at = line.next;
  }
  if (at + 2 > count || bytes[at + 1] != '\n' || !framed_once(&parsed.framing)) return false;
  parsed.length = (uint16_t)(at + 2);
  *response = parsed;
  return true;
}

/* ---- a head read after the last one ----------------------------------------------------------- */

/* The index of the first byte where the `count` bytes at `a` and `b` differ, or `count`. */
static size_t first_difference(const unsigned char *a, const unsigned char *b, size_t count) {
  size_t index = 0;
#if defined(__SSE2__)
  if (count >= 16) {
    /* 32 bytes a turn, told apart only when they differ. */
    for (; index + 32 <= count; index += 32) {
      __m128i first = _mm_cmpeq_epi8(_mm_loadu_si128((const __m128i *)(a + index)),
                                     _mm_loadu_si128((const __m128i *)(b + index)));
      __m128i second = _mm_cmpeq_epi8(_mm_loadu_si128((const __m128i *)(a + index + 16)),
                                      _mm_loadu_si128((const __m128i *)(b + index + 16)));
      if ((unsigned)_mm_movemask_epi8(_mm_and_si128(first, second)) == 0xFFFF) continue;
      unsigned same = (unsigned)_mm_movemask_epi8(first);
      if (same != 0xFFFF) return index + (size_t)__builtin_ctz(~same);
      return index + 16 + (size_t)__builtin_ctz(~(unsigned)_mm_movemask_epi8(second));
    }
    if (index + 16 <= count) {
      unsigned same = (unsigned)_mm_movemask_epi8(
          _mm_cmpeq_epi8(_mm_loadu_si128((const __m128i *)(a + index)), _mm_loadu_si128((const __m128i *)(b + index))));
      if (same != 0xFFFF) return index + (size_t)__builtin_ctz(~same);
      index += 16;
    }
    if (index == count) return count;
    /* The last bytes, in the 16 that end at `count`: those it shares with the vector before are equal. */
    index = count - 16;
    unsigned same = (unsigned)_mm_movemask_epi8(
        _mm_cmpeq_epi8(_mm_loadu_si128((const __m128i *)(a + index)), _mm_loadu_si128((const __m128i *)(b + index))));
    return same == 0xFFFF ? count : index + (size_t)__builtin_ctz(~same);
  }
#endif
  while (index < count && a[index] == b[index]) index++;
  return index;
}

#if defined(__SSE2__)
/* The line feeds among the 16 bytes at `bytes`: bit i for byte i. */
static inline unsigned line_feeds16(const unsigned char *bytes) {
  return (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(_mm_loadu_si128((const __m128i *)bytes), _mm_set1_epi8('\n')));
}
#endif

/* Where the line that holds byte `to` - 1 begins, looking back no further than `from`: after the
 * last line feed in `from` ..< `to`, else `from`. 16 bytes at a time, from the end. */
static inline size_t line_start_before(const unsigned char *bytes, size_t from, size_t to) {
#if defined(__SSE2__)
  for (; to >= from + 16; to -= 16) {
    unsigned found = line_feeds16(bytes + to - 16);
    if (found) return to - 16 + (size_t)(31 - __builtin_clz(found)) + 1;
  }
  if (to > from && to >= 16) { /* the 16 bytes that end at `to`, those before `from` masked off */
    unsigned found = line_feeds16(bytes + to - 16) & 0xFFFFu << (16 - (to - from)) & 0xFFFFu;
    return found ? to - 16 + (size_t)(31 - __builtin_clz(found)) + 1 : from;
  }
#endif
  while (to > from && bytes[to - 1] != '\n') to--;
  return to;
}

/* Where the line after the one at `from` begins: after the first line feed in `from` ..< `count`,
 * else `count`. */
static inline size_t next_line_start(const unsigned char *bytes, size_t from, size_t count) {
#if defined(__SSE2__)
  for (; from + 16 <= count; from += 16) {
    unsigned found = line_feeds16(bytes + from);
    if (found) return from + (size_t)__builtin_ctz(found) + 1;
  }
  if (from < count && count >= 16) { /* the 16 bytes that end at `count`, those before `from` shifted out */
    unsigned found = line_feeds16(bytes + count - 16) >> (16 - (count - from));
    return found ? from + (size_t)__builtin_ctz(found) + 1 : count;
  }
#endif
  while (from < count && bytes[from] != '\n') from++;
  return from < count ? from + 1 : count;
}

/* A head read line by line beside the last one, both at the start of a line (`at` in this head,
 * `old_at` in the last): the lines up to the next byte that differs are the last head's, and are
 * not read again; the line that byte is in is read, and the two heads go on from their next lines.
 * A server's heads differ in a few lines (Date, Content-Length, ETag), a client's requests in their
 * targets and a header or two: those lines alone are read. */
typedef struct aligned_heads {
  const unsigned char *bytes, *old;
  size_t at, old_at, count, old_count;
} aligned_heads;

/* Moves both heads to the start of the line in which they next differ (`*differs`: how far from
 * where they were that byte is), and returns where in the last head the lines they passed begin.
 * Neither moves when no line feed comes before the difference. */
static inline size_t skip_same_lines(aligned_heads *heads, size_t *differs) {
  size_t left = heads->count - heads->at, old_left = heads->old_count - heads->old_at;
  size_t shared = left < old_left ? left : old_left;
  *differs = first_difference(heads->bytes + heads->at, heads->old + heads->old_at, shared);
  size_t old_from = heads->old_at;
  size_t passed = line_start_before(heads->bytes, heads->at, heads->at + *differs) - heads->at;
  heads->at += passed;
  heads->old_at += passed;
  return old_from;
}

/* Past the line read at `heads->at` (ending at `next`) and the last head's line beside it. */
static inline void next_lines(aligned_heads *heads, size_t next) {
  heads->at = next;
  heads->old_at = next_line_start(heads->old, heads->old_at, heads->old_count);
}

bool cnm_read_simple_response(const unsigned char *bytes, size_t available, cnm_simple_response *last,
                              unsigned char *last_bytes) {
  size_t count = available < CNM_SIMPLE_HEAD_CAPACITY ? available : CNM_SIMPLE_HEAD_CAPACITY;
  if (count < 17) return false; /* no response head is this short */
  /* The last head again (a poller's answers, a server's within a second of its Date): libc's
   * compare, twice as wide as first_difference's where the CPU has AVX2. */
  if (last->length && last->length <= count && memcmp(bytes, last_bytes, last->length) == 0) return true;
  aligned_heads heads = {bytes, last_bytes, 0, 0, count, last->length};
  cnm_simple_response parsed = {.status = last->status};
  for (;;) {
    size_t differs, at = heads.at, old_from = skip_same_lines(&heads, &differs);
    if (heads.at == 0) { /* no last head, or its status line differs: read this one whole */
      if (!cnm_parse_simple_response(bytes, available, &parsed)) return false;
      break;
    }
    if (differs == heads.old_count - old_from && differs != 0) { /* the rest of the last head again */
      if (!take_framing_again(&last->framing, old_from, heads.old_count, at, &parsed.framing)) return false;
      parsed.length = (uint16_t)(at + heads.old_count - old_from);
      break;
    }
    if (!take_framing_again(&last->framing, old_from, heads.old_at, at, &parsed.framing)) return false;
    if (heads.at == count) return false; /* the bytes end before the head does */
    if (bytes[heads.at] == '\r') { /* the blank line that ends the head */
      if (heads.at + 2 > count || bytes[heads.at + 1] != '\n') return false;
      parsed.length = (uint16_t)(heads.at + 2);
      break;
    }
    header_line line;
    if (!read_header_line(bytes, NULL, heads.at, count, &line) || !take_response_header(bytes, &line, &parsed))
      return false;
    next_lines(&heads, line.next);
    if (heads.at == count) return false;
  }
  if (!framed_once(&parsed.framing)) return false;
  memcpy(last_bytes, bytes, parsed.length);
  *last = parsed;
  return true;
}

bool cnm_read_simple_request(const unsigned char *bytes, size_t available, cnm_simple_request *last,
                             unsigned char *last_bytes) {
  cnm_simple_request parsed;
  if (!last->length) {
    if (!cnm_parse_simple_request(bytes, available, &parsed)) return false;
    memcpy(last_bytes, bytes, parsed.length);
    *last = parsed;
    return true;
  }
  size_t count = available < CNM_SIMPLE_HEAD_CAPACITY ? available : CNM_SIMPLE_HEAD_CAPACITY;
  uint8_t method, minor;
  size_t lines = request_line_length(bytes, count, &method, &minor);
  if (!lines) return false;
  parsed = request_line_fields(method, lines, minor);
  size_t last_lines = (size_t)last->method_length + 1 + last->target_length + 11;
  aligned_heads heads = {bytes, last_bytes, lines, last_lines, count, last->length};
  for (;;) {
    size_t differs, at = heads.at, old_from = skip_same_lines(&heads, &differs);
    /* The rest of the last head again, its blank line too (none left of it: this head goes on). */
    if (differs == heads.old_count - old_from && differs != 0) {
      if (!take_request_lines_again(last, old_from, heads.old_count, at, &parsed)) return false;
      parsed.length = (uint16_t)(at + differs);
      break;
    }
    if (!take_request_lines_again(last, old_from, heads.old_at, at, &parsed)) return false;
    if (heads.at == count) return false; /* the bytes end before the blank line that would end the head */
    if (bytes[heads.at] == '\r') { /* the blank line ends the head (its body, if any, follows) */
      if (heads.at + 2 > count || bytes[heads.at + 1] != '\n') return false;
      parsed.length = (uint16_t)(heads.at + 2);
      break;
    }
    header_line line;
    if (!read_header_line(bytes, NULL, heads.at, count, &line) || !take_request_header(bytes, &line, &parsed))
      return false;
    next_lines(&heads, line.next);
    if (heads.at == count) return false;
  }
  if (!framed_once(&parsed.framing)) return false;
  memcpy(last_bytes, bytes, parsed.length);
  *last = parsed;
  return true;
}
