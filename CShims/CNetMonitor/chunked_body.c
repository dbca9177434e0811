/* A chunked body, read as the Swift parser reads one (cnm_chunked_body.h). */
#include "cnm_chunked_body.h"

/* Field text: HTAB, or a byte from SP on but DEL (HTTPByteClass.isFieldText). */
static inline bool is_field_text(unsigned char byte) { return byte == '\t' || (byte >= 0x20 && byte != 0x7F); }

/* A token byte (tchar, HTTPByteClass.isToken). */
static inline bool is_token(unsigned char byte) {
  if (byte < 64) return (0x03FF6CFA00000000ull >> byte) & 1;
  if (byte < 128) return (0x57FFFFFFC7FFFFFEull >> (byte - 64)) & 1;
  return false;
}

/* The value of a hexadecimal digit, or 16 when the byte is none. */
static inline unsigned hex_digit(unsigned char byte) {
  unsigned digit = (unsigned)byte - '0';
  if (digit < 10) return digit;
  unsigned letter = (unsigned)(byte | 0x20) - 'a';
  return letter < 6 ? letter + 10 : 16;
}

/* A chunk-size line begins (beginChunkSizeLine). */
static inline void begin_size_line(cnm_chunked_body *body) {
  body->phase = CNM_CHUNKED_SIZE;
  body->size = 0;
  body->has_digits = 0;
  body->line_bytes = 0;
}

/* A chunk-size line ended: its data follows, or the trailer section after the last chunk. */
static inline void end_size_line(cnm_chunked_body *body) {
  if (body->size == 0) {
    body->phase = CNM_CHUNKED_TRAILER_START;
  } else {
    body->remaining = body->size;
    body->phase = CNM_CHUNKED_DATA;
  }
}

typedef enum { MORE, INVALID, ENDED } scanned;

/* One byte of framing (HTTPStreamParser.scan, then scanChunked). */
static inline scanned scan(cnm_chunked_body *body, unsigned char byte) {
  if (++body->line_bytes > CNM_CHUNKED_LINE_LIMIT) return INVALID;
  if (body->cr_pending) {
    body->cr_pending = 0;
    if (byte != '\n') return INVALID; /* a bare CR */
  } else if (byte == '\r') {
    body->cr_pending = 1;
    return MORE;
  }
  switch (body->phase) {
  case CNM_CHUNKED_SIZE: {
    unsigned digit = hex_digit(byte);
    if (digit < 16) {
      if (body->size >> 56) return INVALID; /* more than 15 significant digits */
      body->size = body->size << 4 | digit;
      body->has_digits = 1;
      return MORE;
    }
    if (!body->has_digits) return INVALID;
    body->phase = CNM_CHUNKED_SIZE_END;
  }
    /* fall through - to the byte after the digits */
  case CNM_CHUNKED_SIZE_END:
    if (byte == '\n') break;
    if (byte == ' ' || byte == '\t') return MORE;
    if (byte != ';') return INVALID;
    body->phase = CNM_CHUNKED_EXTENSION;
    return MORE;
  case CNM_CHUNKED_EXTENSION:
    if (byte == '\n') break;
    return is_field_text(byte) ? MORE : INVALID;
  case CNM_CHUNKED_DATA_END:
    if (byte != '\n') return INVALID; /* data longer than its size */
    begin_size_line(body);
    return MORE;
  case CNM_CHUNKED_TRAILER_START:
    if (byte == '\n') return ENDED;
    if (!is_token(byte) && byte != ' ' && byte != '\t') return INVALID;
    body->phase = CNM_CHUNKED_TRAILER_LINE;
    return MORE;
  case CNM_CHUNKED_TRAILER_LINE:
    if (byte == '\n') {
      body->phase = CNM_CHUNKED_TRAILER_START;
      return MORE;
    }
    return is_field_text(byte) ? MORE : INVALID;
  default:
    return INVALID;
  }
  end_size_line(body); /* the LF that ends a size line */
  return MORE;
}

cnm_chunked_outcome cnm_chunked_read(cnm_chunked_body *body, const unsigned char *bytes, size_t count, size_t *used) {
  cnm_chunked_body next = *body;
  size_t index = 0;
  while (index < count) {
    if (next.phase == CNM_CHUNKED_DATA) { /* the chunk's data, counted */
      size_t left = count - index;
      size_t taken = next.remaining < left ? (size_t)next.remaining : left;
      next.remaining -= taken;
      index += taken;
      if (next.remaining == 0) next.phase = CNM_CHUNKED_DATA_END;
      continue;
    }
    if (!bytes) return CNM_CHUNKED_REFUSED; /* framing not seen */
    bool cr_pending = next.cr_pending;
    scanned outcome = scan(&next, bytes[index++]);
    if (outcome == INVALID) return CNM_CHUNKED_REFUSED;
    if (outcome == ENDED) { /* as before its last byte (the phase is where it was) */
      next.cr_pending = cr_pending;
      next.line_bytes--;
      next.ended = 1;
      next.bytes += index;
      *body = next;
      *used = index;
      return CNM_CHUNKED_ENDED;
    }
  }
  next.bytes += count;
  *body = next;
  *used = count;
  return CNM_CHUNKED_GOES_ON;
}
