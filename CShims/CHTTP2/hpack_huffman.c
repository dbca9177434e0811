/* HPACK's Huffman decoding (RFC 7541 §5.2 and Appendix B). The code is canonical, so a symbol is
 * found from the next bits of the string: one table look-up for the codes of 8 bits or fewer (what
 * text is made of), a short scan of per-length limits for the longer ones. */
#include "hpack_private.h"

#include "hpack_huffman_table.h"

/* Decodes the code at the top of `window` (left-aligned; bits past the string read as zeros):
 * sets *length to its bit length and returns its symbol (256 for EOS). */
static unsigned decode_symbol(uint32_t window, unsigned *length) {
  uint16_t entry = huffman_short[window >> 24];
  if (entry != 0) {
    *length = entry >> 8;
    return entry & 0xffu;
  }
  const struct huffman_long_row *row = huffman_long;
  const struct huffman_long_row *last = huffman_long + sizeof huffman_long / sizeof huffman_long[0] - 1;
  while (row < last && window >= row->limit) row++;
  uint32_t index = (window >> (32 - row->length)) + row->offset;
  *length = row->length;
  /* Always in range by construction; checked anyway (an out-of-range index reads as EOS). */
  return index < sizeof huffman_long_symbols / sizeof huffman_long_symbols[0] ? huffman_long_symbols[index] : 256;
}

/* See hpack_private.h. The bits are kept left-aligned in a 64-bit window refilled a byte at a time,
 * so a whole code (30 bits at most) is in it while input remains. At the end of the input, a code
 * longer than the bits left is either the padding (at most 7 bits, all ones) or an error. */
ch2_status ch2_huffman_decode(const uint8_t *input, size_t length, ch2_output output, size_t *decoded_length) {
  const uint8_t *end = input + length;
  uint64_t window = 0;
  unsigned bits = 0;
  size_t count = 0;
  *decoded_length = 0;
  for (;;) {
    while (bits <= 56 && input < end) {
      window |= (uint64_t)*input++ << (56 - bits);
      bits += 8;
    }
    if (bits == 0) break;
    uint32_t top = (uint32_t)(window >> 32);
    unsigned code_length;
    unsigned symbol = decode_symbol(top, &code_length);
    if (code_length > bits) {
      /* Only at the end of the input (bits >= 57 while it lasts): padding, or a cut code. */
      if (bits <= 7 && (top >> (32 - bits)) == (1u << bits) - 1) break;
      return CH2_HPACK_BAD_HUFFMAN;
    }
    if (symbol == 256) return CH2_HPACK_BAD_HUFFMAN;
    if (count < output.first_capacity) {
      output.first[count] = (uint8_t)symbol;
    } else if (count - output.first_capacity < output.second_capacity) {
      output.second[count - output.first_capacity] = (uint8_t)symbol;
    }
    count++;
    window <<= code_length;
    bits -= code_length;
  }
  *decoded_length = count;
  return CH2_OK;
}
