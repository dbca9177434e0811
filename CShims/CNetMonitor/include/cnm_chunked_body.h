/* A chunked body (RFC 9112 §7.1) read as the Swift parser reads one (HTTPStreamParser+Chunked.swift),
 * byte for byte and in the same states, so that the hooks can take a response's chunked body
 * themselves (exchange_replay.c) and Swift, taking a connection over halfway through it, goes on
 * from where they were (ExchangeReplay.swift). Its chunk-size lines (hexadecimal digits, whitespace,
 * extensions), the CRLF after each chunk's data and its trailer section are read a byte at a time,
 * with the Swift parser's leniencies (a bare LF ends a line) and limits (a size of at most 15
 * significant digits; 256 KiB of framing lines from a size line on); the chunks' data is only
 * counted. Nothing here allocates, locks or touches errno. */
#ifndef CNM_CHUNKED_BODY_H
#define CNM_CHUNKED_BODY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Where a chunked body is: HTTPStreamParser.Phase's chunked cases, in the same order. */
enum {
  CNM_CHUNKED_SIZE = 0,           /* a chunk-size line's digits */
  CNM_CHUNKED_SIZE_END = 1,       /* after them: whitespace, `;` or the line end */
  CNM_CHUNKED_EXTENSION = 2,      /* a chunk extension, up to the line end */
  CNM_CHUNKED_DATA = 3,           /* chunk data: `remaining` bytes */
  CNM_CHUNKED_DATA_END = 4,       /* the CRLF after chunk data */
  CNM_CHUNKED_TRAILER_START = 5,  /* the first byte of a trailer line, or the blank line that ends the body */
  CNM_CHUNKED_TRAILER_LINE = 6,   /* a trailer line, up to its end */
};

/* A chunked body under way; all zero is one whose first size line is next. The fields are the
 * Swift parser's of the same meaning (in parentheses). */
typedef struct cnm_chunked_body {
  uint64_t size;       /* the chunk size read so far (number) */
  uint64_t remaining;  /* the current chunk's data bytes still to come (remaining) */
  uint64_t bytes;      /* the body's bytes so far, framing and data (added to messageBytes) */
  uint32_t line_bytes; /* bytes of framing since the last size line began (scanBytes) */
  uint8_t phase;       /* CNM_CHUNKED_… (phase) */
  uint8_t has_digits;  /* the size line has a digit (matchIndex) */
  uint8_t cr_pending;  /* a CR was the last byte: the next must be LF (crPending) */
  /* The body ended (its last byte, an LF, counted in `bytes`): the other fields are as they were
   * before that byte, so that a parser resumed from them reads it to end the body too. */
  uint8_t ended;
} cnm_chunked_body;

#define CNM_CHUNKED_LINE_LIMIT (256u * 1024u) /* HTTPStreamParser.maxHeadBytes */

typedef enum cnm_chunked_outcome {
  CNM_CHUNKED_GOES_ON, /* every byte was the body's, and it goes on */
  CNM_CHUNKED_ENDED,   /* it ended: `*used` of the bytes were its */
  CNM_CHUNKED_REFUSED, /* not a chunked body the Swift parser reads (it gives up), or bytes not
                          seen (`bytes` NULL) where its framing is: `body` as it was */
} cnm_chunked_outcome;

/* Reads the next `count` bytes of `body` at `bytes` (NULL: bytes not seen, as sendfile's, which
 * only a chunk's data may be). On CNM_CHUNKED_REFUSED `body` is left as it was before the call. */
cnm_chunked_outcome cnm_chunked_read(cnm_chunked_body *body, const unsigned char *bytes, size_t count, size_t *used)
    __attribute__((visibility("hidden")));

#endif
