/* What hpack.c uses of hpack_huffman.c: not part of the module's interface. */
#ifndef CHTTP2_HPACK_PRIVATE_H
#define CHTTP2_HPACK_PRIVATE_H

#include "chttp2.h"

/* Where a decoded string goes: `first` (first_capacity bytes), then `second` (second_capacity
 * bytes; a ring's start, when the string wraps at its end), then nowhere: bytes past both are
 * counted, not written. */
typedef struct ch2_output {
  uint8_t *first, *second;
  size_t first_capacity, second_capacity;
} ch2_output;

/* Decodes the Huffman string (RFC 7541 §5.2, Appendix B) of `length` bytes at `input` into
 * `output`, and sets *decoded_length to its whole decoded length (written or not). Returns CH2_OK,
 * or CH2_HPACK_BAD_HUFFMAN for EOS in the string, padding over 7 bits or padding not all ones. */
__attribute__((visibility("hidden"))) ch2_status ch2_huffman_decode(const uint8_t *input, size_t length,
                                                                    ch2_output output,
                                                                    size_t *decoded_length);

#endif
