/* The two byte runs an HTTP/1.x head is mostly made of, found 16 bytes at a time: a header name's
 * common bytes, and text up to a control byte (a field value, a reason phrase, a request target).
 * Static inline, so that the Swift parser (HTTPByteClass) inlines them: no call, no lock, no
 * allocation, no global state. SSE2 (every x86_64); elsewhere the same answers a byte at a time.
 *
 * Every function returns an index in [from, count]: the first byte at or after `from` that is not
 * in the run, or `count` when all are. `base` is where the buffer begins: bytes before `from` may
 * be read (a run's last bytes, in the vector that ends at `count`), those at and after `count`
 * never. */
#ifndef CNM_HTTP_SCAN_H
#define CNM_HTTP_SCAN_H

#include <stddef.h>
#include <stdint.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

/* A byte of a header name as nearly every sender writes it: an ASCII letter, digit or `-`. */
static inline int cnm_is_name_byte(uint8_t byte) {
  uint8_t lower = byte | 0x20;
  return (lower >= 'a' && lower <= 'z') || (byte >= '0' && byte <= '9') || byte == '-';
}

#if defined(__SSE2__)
/* Bit i set where byte i of `bytes` is not a letter, digit or `-`. */
static inline unsigned cnm_name_misses(__m128i bytes) {
  __m128i lower = _mm_or_si128(bytes, _mm_set1_epi8(0x20)); /* bytes ≥ 0x80 stay negative: no letter */
  __m128i letter = _mm_and_si128(_mm_cmpgt_epi8(lower, _mm_set1_epi8('a' - 1)), _mm_cmplt_epi8(lower, _mm_set1_epi8('z' + 1)));
  __m128i digit = _mm_and_si128(_mm_cmpgt_epi8(bytes, _mm_set1_epi8('0' - 1)), _mm_cmplt_epi8(bytes, _mm_set1_epi8('9' + 1)));
  __m128i dash = _mm_cmpeq_epi8(bytes, _mm_set1_epi8('-'));
  return ~(unsigned)_mm_movemask_epi8(_mm_or_si128(_mm_or_si128(letter, digit), dash)) & 0xFFFFu;
}

/* Bit i set where byte i of `bytes` is below `limit` (unsigned; `limit` ≥ 1) or DEL. */
static inline unsigned cnm_text_misses(__m128i bytes, uint8_t limit) {
  __m128i below = _mm_cmpeq_epi8(_mm_min_epu8(bytes, _mm_set1_epi8((char)(limit - 1))), bytes);
  __m128i del = _mm_cmpeq_epi8(bytes, _mm_set1_epi8(0x7F));
  return (unsigned)_mm_movemask_epi8(_mm_or_si128(below, del));
}
#endif

/* The end of the run of letters, digits and `-` at `from`. */
static inline size_t cnm_name_bytes_end(const uint8_t *base, size_t from, size_t count) {
  size_t index = from;
#if defined(__SSE2__)
  if (count >= 16) {
    for (; index + 16 <= count; index += 16) {
      unsigned misses = cnm_name_misses(_mm_loadu_si128((const __m128i *)(base + index)));
      if (misses) return index + (size_t)__builtin_ctz(misses);
    }
    /* The last bytes, fewer than 16 (a head's last line, or what the vectors before left): in the
     * vector that ends at `count`, its bytes before `index` shifted out. */
    if (index < count) {
      unsigned misses = cnm_name_misses(_mm_loadu_si128((const __m128i *)(base + count - 16))) >> (16 - (count - index));
      return misses ? index + (size_t)__builtin_ctz(misses) : count;
    }
    return count;
  }
#endif
  while (index < count && cnm_is_name_byte(base[index])) index++;
  return index;
}

/* The first byte at or after `from` that is below `limit` (1…128) or DEL. */
static inline size_t cnm_text_end(const uint8_t *base, size_t from, size_t count, uint8_t limit) {
  size_t index = from;
#if defined(__SSE2__)
  if (count >= 16) {
    for (; index + 16 <= count; index += 16) {
      unsigned misses = cnm_text_misses(_mm_loadu_si128((const __m128i *)(base + index)), limit);
      if (misses) return index + (size_t)__builtin_ctz(misses);
    }
    if (index < count) { /* as cnm_name_bytes_end's last bytes */
      unsigned misses =
          cnm_text_misses(_mm_loadu_si128((const __m128i *)(base + count - 16)), limit) >> (16 - (count - index));
      return misses ? index + (size_t)__builtin_ctz(misses) : count;
    }
    return count;
  }
#endif
  while (index < count && base[index] >= limit && base[index] != 0x7F) index++;
  return index;
}

#endif
