/* HPACK decoding (RFC 7541): the dynamic table kept in sync with the peer's encoder, and the few
 * fields a monitor records decoded into ch2_fields.
 *
 * The table's entries are two rings sized by the table's maximum size W (max_size): `entries`, of
 * W / 32 slots (no entry is smaller than 32), and `bytes`, of W bytes, where each entry's name and
 * value follow each other, the entries in the order they came. So a table of 4096 touches only the
 * first 4096 bytes and 128 slots. A new entry's bytes are written at `byte_head`, over free space
 * and over the bytes of the oldest entries, which are exactly the ones it evicts (the entries kept
 * and the new one fit in W). A size update evicts, then lays the rings out again from 0 for the
 * new W.
 *
 * Why one file of ~1,200 lines: it is one decoder, read in the order of its sections — the
 * recorded fields and the static table, the block's primitives (§5), the memo of Huffman strings,
 * the dynamic table (§2.3.2, §4), the representations (§6), replaying a block like the last one,
 * the table left unkept for a peer that never names it, and the interface (chttp2.h) — and every
 * section's helpers are static and called per field on the per-stream path. In one translation
 * unit the compiler inlines them across sections (the replay and the unkept table call the
 * representations' and the table's helpers); split into files they would become calls, and the
 * per-stream cost is what `scripts/bench-hpack` holds to. The Huffman decoder, which needs none
 * of that state, is hpack_huffman.c. */
#include "hpack_private.h"

#include "hpack_names_table.h"

#include <limits.h>
#include <stddef.h>
#include <string.h>

/* ---- fields -------------------------------------------------------------------------------------- */

/* The names recorded. */
enum {
  FIELD_NONE, FIELD_METHOD, FIELD_SCHEME, FIELD_AUTHORITY, FIELD_PATH, FIELD_STATUS, FIELD_CONTENT_TYPE,
  FIELD_GRPC_STATUS, FIELD_GRPC_MESSAGE, FIELD_HOST,
};

/* RFC 7541 Appendix A, with the recorded field of each name. Index 0 is not an entry. */
static const struct static_entry {
  const char *name, *value;
  uint8_t name_length, value_length, field;
} static_table[62] = {
#define ENTRY(name, value, field) {name, value, sizeof name - 1, sizeof value - 1, field}
    ENTRY("", "", FIELD_NONE),
    ENTRY(":authority", "", FIELD_AUTHORITY),
    ENTRY(":method", "GET", FIELD_METHOD),
    ENTRY(":method", "POST", FIELD_METHOD),
    ENTRY(":path", "/", FIELD_PATH),
    ENTRY(":path", "/index.html", FIELD_PATH),
    ENTRY(":scheme", "http", FIELD_SCHEME),
    ENTRY(":scheme", "https", FIELD_SCHEME),
    ENTRY(":status", "200", FIELD_STATUS),
    ENTRY(":status", "204", FIELD_STATUS),
    ENTRY(":status", "206", FIELD_STATUS),
    ENTRY(":status", "304", FIELD_STATUS),
    ENTRY(":status", "400", FIELD_STATUS),
    ENTRY(":status", "404", FIELD_STATUS),
    ENTRY(":status", "500", FIELD_STATUS),
    ENTRY("accept-charset", "", FIELD_NONE),
    ENTRY("accept-encoding", "gzip, deflate", FIELD_NONE),
    ENTRY("accept-language", "", FIELD_NONE),
    ENTRY("accept-ranges", "", FIELD_NONE),
    ENTRY("accept", "", FIELD_NONE),
    ENTRY("access-control-allow-origin", "", FIELD_NONE),
    ENTRY("age", "", FIELD_NONE),
    ENTRY("allow", "", FIELD_NONE),
    ENTRY("authorization", "", FIELD_NONE),
    ENTRY("cache-control", "", FIELD_NONE),
    ENTRY("content-disposition", "", FIELD_NONE),
    ENTRY("content-encoding", "", FIELD_NONE),
    ENTRY("content-language", "", FIELD_NONE),
    ENTRY("content-length", "", FIELD_NONE),
    ENTRY("content-location", "", FIELD_NONE),
    ENTRY("content-range", "", FIELD_NONE),
    ENTRY("content-type", "", FIELD_CONTENT_TYPE),
    ENTRY("cookie", "", FIELD_NONE),
    ENTRY("date", "", FIELD_NONE),
    ENTRY("etag", "", FIELD_NONE),
    ENTRY("expect", "", FIELD_NONE),
    ENTRY("expires", "", FIELD_NONE),
    ENTRY("from", "", FIELD_NONE),
    ENTRY("host", "", FIELD_HOST),
    ENTRY("if-match", "", FIELD_NONE),
    ENTRY("if-modified-since", "", FIELD_NONE),
    ENTRY("if-none-match", "", FIELD_NONE),
    ENTRY("if-range", "", FIELD_NONE),
    ENTRY("if-unmodified-since", "", FIELD_NONE),
    ENTRY("last-modified", "", FIELD_NONE),
    ENTRY("link", "", FIELD_NONE),
    ENTRY("location", "", FIELD_NONE),
    ENTRY("max-forwards", "", FIELD_NONE),
    ENTRY("proxy-authenticate", "", FIELD_NONE),
    ENTRY("proxy-authorization", "", FIELD_NONE),
    ENTRY("range", "", FIELD_NONE),
    ENTRY("referer", "", FIELD_NONE),
    ENTRY("refresh", "", FIELD_NONE),
    ENTRY("retry-after", "", FIELD_NONE),
    ENTRY("server", "", FIELD_NONE),
    ENTRY("set-cookie", "", FIELD_NONE),
    ENTRY("strict-transport-security", "", FIELD_NONE),
    ENTRY("transfer-encoding", "", FIELD_NONE),
    ENTRY("user-agent", "", FIELD_NONE),
    ENTRY("vary", "", FIELD_NONE),
    ENTRY("via", "", FIELD_NONE),
    ENTRY("www-authenticate", "", FIELD_NONE),
#undef ENTRY
};
#define STATIC_ENTRIES 61u

/* The table's bytes come last, with no padding after them: a table of 4096 leaves the pages past
 * its first 4096 bytes untouched (HPACKTests checks it). */
_Static_assert(sizeof(ch2_hpack_decoder) == offsetof(ch2_hpack_decoder, bytes) + CH2_HPACK_TABLE_SIZE,
               "ch2_hpack_decoder ends with its bytes");

/* Text in at most two pieces (an entry that wraps at the end of the ring). */
typedef struct text {
  const uint8_t *first, *second;
  size_t first_length, second_length;
} text;

/* A text of one piece. */
static text plain_text(const void *bytes, size_t length) {
  text result = {bytes, NULL, length, 0};
  return result;
}

/* Copies `length` bytes (`word` to 2 × `word`, `word` at most 8) as their first and last `word`
 * bytes, which may overlap. */
static inline void copy_ends(uint8_t *destination, const uint8_t *source, size_t length, size_t word) {
  uint64_t head, tail;
  memcpy(&head, source, word);
  memcpy(&tail, source + length - word, word);
  memcpy(destination, &head, word);
  memcpy(destination + length - word, &tail, word);
}

/* Copies `length` bytes from `source` to `destination` (ranges that do not overlap). A field's name
 * or value is short, and a call to memcpy costs more than copying it does: up to 16 bytes are
 * copied as two words that may overlap each other. */
static inline void copy_bytes(uint8_t *destination, const uint8_t *source, size_t length) {
  if (length > 16) {
    memcpy(destination, source, length);
  } else if (length >= 8) {
    copy_ends(destination, source, length, 8);
  } else if (length >= 4) {
    copy_ends(destination, source, length, 4);
  } else {
    for (size_t i = 0; i < length; i++) destination[i] = source[i];
  }
}

/* Copies the first `capacity` bytes of `source` at `destination`. */
static inline void copy_text(uint8_t *destination, size_t capacity, text source) {
  size_t first = source.first_length < capacity ? source.first_length : capacity;
  copy_bytes(destination, source.first, first);
  size_t second = source.second_length < capacity - first ? source.second_length : capacity - first;
  if (second > 0) copy_bytes(destination + first, source.second, second);
}

/* The recorded field that the name `name` (`length` bytes) is, or FIELD_NONE. */
static unsigned field_of_name(const uint8_t *name, size_t length) {
  switch (length) {
  case 4: return memcmp(name, "host", 4) == 0 ? FIELD_HOST : FIELD_NONE;
  case 5: return memcmp(name, ":path", 5) == 0 ? FIELD_PATH : FIELD_NONE;
  case 7:
    if (memcmp(name, ":method", 7) == 0) return FIELD_METHOD;
    if (memcmp(name, ":scheme", 7) == 0) return FIELD_SCHEME;
    return memcmp(name, ":status", 7) == 0 ? FIELD_STATUS : FIELD_NONE;
  case 10: return memcmp(name, ":authority", 10) == 0 ? FIELD_AUTHORITY : FIELD_NONE;
  case 11: return memcmp(name, "grpc-status", 11) == 0 ? FIELD_GRPC_STATUS : FIELD_NONE;
  case 12:
    if (memcmp(name, "content-type", 12) == 0) return FIELD_CONTENT_TYPE;
    return memcmp(name, "grpc-message", 12) == 0 ? FIELD_GRPC_MESSAGE : FIELD_NONE;
  default: return FIELD_NONE;
  }
}

/* field_of_name for a name in two pieces. */
static unsigned field_of_text(text name) {
  if (name.second_length == 0) return field_of_name(name.first, name.first_length);
  uint8_t joined[12];
  size_t length = name.first_length + name.second_length;
  if (length > sizeof joined) return FIELD_NONE;
  copy_text(joined, sizeof joined, name);
  return field_of_name(joined, length);
}

/* The fields of the block being decoded: which were seen (a bit per FIELD_*), and a scratch for
 * the numbers' digits; and what says whether decoding the block again would do the same (see
 * replay): a size update or an entry too large for the table seen, an entry of the dynamic table
 * named, the entries inserted and their size. */
typedef struct recorder {
  ch2_fields *fields;
  unsigned seen;
  uint8_t digits[4];
  uint8_t resized, named_dynamic;
  uint32_t inserted, inserted_size;
} field_recorder;

/* Where the value of `field` is to be written, with its capacity; NULL when it is not written (not
 * recorded, or recorded already: the first occurrence wins; host only without :authority). */
static inline __attribute__((always_inline)) uint8_t *field_target(field_recorder *recorder, unsigned field, size_t *capacity) {
  ch2_fields *fields = recorder->fields;
  if (recorder->seen & (1u << field)) return NULL;
  switch (field) {
  case FIELD_METHOD: *capacity = sizeof fields->method; return fields->method;
  case FIELD_SCHEME: *capacity = sizeof fields->scheme; return fields->scheme;
  case FIELD_HOST:
    if (recorder->seen & (1u << FIELD_AUTHORITY)) return NULL;
    *capacity = sizeof fields->authority;
    return fields->authority;
  case FIELD_AUTHORITY: *capacity = sizeof fields->authority; return fields->authority;
  case FIELD_PATH: *capacity = sizeof fields->path; return fields->path;
  case FIELD_CONTENT_TYPE: *capacity = sizeof fields->content_type; return fields->content_type;
  case FIELD_GRPC_MESSAGE: *capacity = sizeof fields->grpc_message; return fields->grpc_message;
  case FIELD_STATUS:
  case FIELD_GRPC_STATUS: *capacity = sizeof recorder->digits; return recorder->digits;
  default: return NULL;
  }
}

/* The number that `length` digits at `digits` (at most 4 bytes) write, or -1 when they are not
 * between `minimum` and 3 digits. */
static int parse_digits(const uint8_t *digits, size_t length, size_t minimum) {
  if (length < minimum || length > 3) return -1;
  int number = 0;
  for (size_t i = 0; i < length; i++) {
    if (digits[i] < '0' || digits[i] > '9') return -1;
    number = number * 10 + (digits[i] - '0');
  }
  return number;
}

/* Ends the writing of `field`'s value, `length` bytes long (of which the target's capacity were
 * written): sets its length and truncation, or its number, and marks it seen. */
static inline __attribute__((always_inline)) void field_written(field_recorder *recorder, unsigned field, size_t length) {
  ch2_fields *fields = recorder->fields;
  int number;
  recorder->seen |= 1u << field;
  switch (field) {
  case FIELD_METHOD:
    fields->method_length = (uint8_t)(length < sizeof fields->method ? length : sizeof fields->method);
    fields->method_truncated = length > sizeof fields->method;
    break;
  case FIELD_SCHEME:
    fields->scheme_length = (uint8_t)(length < sizeof fields->scheme ? length : sizeof fields->scheme);
    break;
  case FIELD_HOST:
  case FIELD_AUTHORITY:
    fields->authority_length =
        (uint16_t)(length < sizeof fields->authority ? length : sizeof fields->authority);
    fields->authority_truncated = length > sizeof fields->authority;
    break;
  case FIELD_PATH:
    fields->path_length = (uint16_t)(length < sizeof fields->path ? length : sizeof fields->path);
    fields->path_truncated = length > sizeof fields->path;
    fields->path_huffman = 0;
    break;
  case FIELD_CONTENT_TYPE:
    fields->content_type_length =
        (uint8_t)(length < sizeof fields->content_type ? length : sizeof fields->content_type);
    fields->content_type_truncated = length > sizeof fields->content_type;
    break;
  case FIELD_GRPC_MESSAGE:
    fields->grpc_message_length =
        (uint16_t)(length < sizeof fields->grpc_message ? length : sizeof fields->grpc_message);
    fields->grpc_message_truncated = length > sizeof fields->grpc_message;
    break;
  case FIELD_STATUS:
    number = length == 3 ? parse_digits(recorder->digits, length, 3) : -1;
    fields->status = number < 0 ? 0 : (uint16_t)number;
    break;
  case FIELD_GRPC_STATUS:
    number = parse_digits(recorder->digits, length, 1);
    fields->grpc_status = (int16_t)number;
    break;
  default: break;
  }
}

/* Records `value` as `field`'s, unless the field is not written. */
static inline __attribute__((always_inline)) void record_text(field_recorder *recorder, unsigned field, text value) {
  if (field == FIELD_NONE) return;
  size_t capacity;
  uint8_t *target = field_target(recorder, field, &capacity);
  if (target == NULL) return;
  copy_text(target, capacity, value);
  field_written(recorder, field, value.first_length + value.second_length);
}

/* ---- the block's primitives (RFC 7541 §5) -------------------------------------------------------- */

/* The bytes of the block not read yet. */
typedef struct cursor {
  const uint8_t *at, *end;
} block_cursor;

/* The rest of an integer whose prefix (`total`) is all ones: its continuation bytes. */
static ch2_status read_integer_continuation(block_cursor *cursor, uint64_t total, uint32_t *value) {
  for (unsigned shift = 0;; shift += 7) {
    if (cursor->at == cursor->end || shift > 28) return CH2_HPACK_BAD_INTEGER;
    uint8_t byte = *cursor->at++;
    total += (uint64_t)(byte & 0x7fu) << shift;
    if (total > UINT32_MAX) return CH2_HPACK_BAD_INTEGER;
    if (!(byte & 0x80u)) break;
  }
  *value = (uint32_t)total;
  return CH2_OK;
}

/* Reads an integer with a `prefix_bits`-bit prefix (§5.1) into *value. CH2_HPACK_BAD_INTEGER when
 * it overflows 32 bits (or takes more than 5 continuation bytes) or the block ends first. */
static inline ch2_status read_integer(block_cursor *cursor, unsigned prefix_bits, uint32_t *value) {
  if (cursor->at == cursor->end) return CH2_HPACK_BAD_INTEGER;
  uint32_t mask = (1u << prefix_bits) - 1;
  uint32_t prefix = *cursor->at++ & mask;
  if (prefix < mask) {
    *value = prefix;
    return CH2_OK;
  }
  return read_integer_continuation(cursor, prefix, value);
}

/* A string literal (§5.2) as it is in the block. */
typedef struct string_literal {
  const uint8_t *bytes;
  uint32_t length;
  uint8_t huffman;
} string_literal;

/* Reads a string literal's header and steps over its bytes. CH2_HPACK_BAD_STRING when it is longer
 * than what is left of the block. */
static inline ch2_status read_literal(block_cursor *cursor, string_literal *literal) {
  if (cursor->at == cursor->end) return CH2_HPACK_BAD_INTEGER;
  literal->huffman = (*cursor->at & 0x80u) != 0;
  ch2_status status = read_integer(cursor, 7, &literal->length);
  if (status != CH2_OK) return status;
  if (literal->length > (size_t)(cursor->end - cursor->at)) return CH2_HPACK_BAD_STRING;
  literal->bytes = cursor->at;
  cursor->at += literal->length;
  return CH2_OK;
}

/* Decodes `literal` into `output` and sets *length to its whole decoded length. */
static ch2_status decode_literal(string_literal literal, ch2_output output, size_t *length) {
  if (literal.huffman) return ch2_huffman_decode(literal.bytes, literal.length, output, length);
  size_t first = literal.length < output.first_capacity ? literal.length : output.first_capacity;
  size_t rest = literal.length - first;
  size_t second = rest < output.second_capacity ? rest : output.second_capacity;
  copy_bytes(output.first, literal.bytes, first);
  if (second > 0) copy_bytes(output.second, literal.bytes + first, second);
  *length = literal.length;
  return CH2_OK;
}

/* ---- the memo of Huffman strings (ch2_hpack_decoder) ---------------------------------------------- */

/* The memo is two-way: a Huffman string of `length` bytes (1 to CH2_HPACK_MEMO_ENCODED) goes in
 * one of the two slots of its set, the one used less recently (`memo_recent`: a bit per slot).
 * The set is a hash of the string's first and last 8 bytes (overlapping when shorter than 16;
 * zero-extended below 8) and its length, multiplied so that every bit moves the top ones: the
 * strings a server repeats look alike (nginx's `date` and `last-modified`, each 22 bytes of one
 * format, and its `server`), and a hash of a few bytes put all three in one set, where each
 * evicted the next, every response. */
static unsigned memo_set(const uint8_t *bytes, uint32_t length) {
  uint64_t first = 0, last = 0;
  if (length >= 8) {
    memcpy(&first, bytes, 8);
    memcpy(&last, bytes + length - 8, 8);
  } else {
    memcpy(&first, bytes, length);
  }
  uint64_t hash = (first * 0x9e3779b97f4a7c15u) ^ ((last + length) * 0xc2b2ae3d27d4eb4fu);
  hash *= 0x9e3779b97f4a7c15u;
  return (unsigned)(hash >> 60) & (CH2_HPACK_MEMO_SLOTS / 2 - 1);
}
_Static_assert(CH2_HPACK_MEMO_SLOTS / 2 <= 16, "memo_set takes the hash's top 4 bits");

/* Whether memo slot `slot` holds the Huffman string `literal`. */
static int memo_holds(const ch2_hpack_decoder *decoder, unsigned slot, string_literal literal) {
  const struct ch2_hpack_memo *memo = &decoder->memo[slot];
  return (decoder->memo_valid >> slot & 1u) && memo->encoded_length == literal.length &&
         memcmp(memo->encoded, literal.bytes, literal.length) == 0;
}

/* Memo slot `slot` was used now: its set's other slot becomes the one to replace. */
static void memo_used(ch2_hpack_decoder *decoder, unsigned slot) {
  decoder->memo_recent = (decoder->memo_recent | 1u << slot) & ~(1u << (slot ^ 1u));
}

/* Writes the `length` bytes at `source` where `output` puts them (those past it: nowhere). */
static void put_output(ch2_output output, const uint8_t *source, size_t length) {
  size_t first = length < output.first_capacity ? length : output.first_capacity;
  size_t second = length - first < output.second_capacity ? length - first : output.second_capacity;
  copy_bytes(output.first, source, first);
  if (second > 0) copy_bytes(output.second, source + first, second);
}

/* decode_literal, with the memo: a Huffman string decoded before (the same bytes, so valid) is
 * copied from there; another one is decoded, and kept in the memo when it fits there and was
 * written whole. */
static ch2_status decode_string(ch2_hpack_decoder *decoder, string_literal literal, ch2_output output, size_t *length) {
  if (!literal.huffman || literal.length == 0 || literal.length > CH2_HPACK_MEMO_ENCODED) {
    return decode_literal(literal, output, length);
  }
  unsigned slot = 2 * memo_set(literal.bytes, literal.length);
  if (memo_holds(decoder, slot, literal) || memo_holds(decoder, ++slot, literal)) {
    const struct ch2_hpack_memo *memo = &decoder->memo[slot];
    put_output(output, memo->decoded, memo->decoded_length);
    *length = memo->decoded_length;
    memo_used(decoder, slot);
    return CH2_OK;
  }
  ch2_status status = decode_literal(literal, output, length);
  if (status != CH2_OK || *length > CH2_HPACK_MEMO_DECODED || *length > output.first_capacity + output.second_capacity) {
    return status;
  }
  if (decoder->memo_recent >> slot & 1u) slot ^= 1u;  /* the set's other slot: used less recently */
  struct ch2_hpack_memo *memo = &decoder->memo[slot];
  size_t first = *length < output.first_capacity ? *length : output.first_capacity;
  copy_bytes(memo->decoded, output.first, first);
  if (*length > first) copy_bytes(memo->decoded + first, output.second, *length - first);
  copy_bytes(memo->encoded, literal.bytes, literal.length);
  memo->encoded_length = (uint8_t)literal.length;
  memo->decoded_length = (uint8_t)*length;
  decoder->memo_valid |= 1u << slot;
  memo_used(decoder, slot);
  return CH2_OK;
}

/* Records the string literal `value` as `field`'s, unless the field is not written (then the
 * literal is not decoded at all). A :path's Huffman code is kept as it is, when it fits (see
 * ch2_fields). */
static ch2_status record_literal(ch2_hpack_decoder *decoder, field_recorder *recorder, unsigned field,
                                 string_literal value) {
  size_t capacity, length;
  uint8_t *target = field_target(recorder, field, &capacity);
  if (target == NULL) return CH2_OK;
  if (field == FIELD_PATH && value.huffman && value.length <= capacity) {
    copy_bytes(target, value.bytes, value.length);
    field_written(recorder, field, value.length);
    recorder->fields->path_huffman = 1;
    return CH2_OK;
  }
  ch2_output output = {target, NULL, capacity, 0};
  ch2_status status = decode_string(decoder, value, output, &length);
  if (status == CH2_OK) field_written(recorder, field, length);
  return status;
}

/* The recorded field that a literal name is. A Huffman name is compared with the recorded names'
 * encodings, not decoded: a name has one encoding (the code is canonical, the padding fixed), and
 * a name that is none of them is not read, as its value is not (a server's `etag` and
 * `accept-ranges`: ~180 instructions each, decoded, in every response nginx sends). */
static unsigned field_of_literal(string_literal name) {
  if (!name.huffman) return field_of_name(name.bytes, name.length);
  if (name.length == 0 || name.length > HUFFMAN_NAME_LONGEST) return FIELD_NONE;
  /* The names of its length (none to three); most names are none of them, told apart by their
   * first byte without a call. */
  uint8_t first = name.bytes[0];
  for (unsigned i = huffman_names_of_length[name.length]; i < huffman_names_of_length[name.length + 1]; i++) {
    const struct huffman_name *known = &huffman_names[i];
    if (known->bytes[0] == first && memcmp(known->bytes, name.bytes, name.length) == 0)
      return field_of_name((const uint8_t *)known->name, known->name_length);
  }
  return FIELD_NONE;
}

/* ---- the dynamic table (§2.3.2, §4) -------------------------------------------------------------- */

/* `offset` (less than twice the ring's size) brought back into the byte ring. */
static uint32_t ring_offset(const ch2_hpack_decoder *decoder, uint32_t offset) {
  return offset >= decoder->max_size ? offset - decoder->max_size : offset;
}

/* The `length` bytes of the ring at `offset`. */
static text ring_text(const ch2_hpack_decoder *decoder, uint32_t offset, size_t length) {
  size_t before_end = decoder->max_size - offset;
  if (length <= before_end) return plain_text(decoder->bytes + offset, length);
  text result = {decoder->bytes + offset, decoder->bytes, before_end, length - before_end};
  return result;
}

/* The `capacity` bytes of the ring at `offset` (capacity at most the ring's size) as an output. */
static ch2_output ring_output(ch2_hpack_decoder *decoder, uint32_t offset, size_t capacity) {
  size_t before_end = decoder->max_size - offset;
  size_t first = capacity < before_end ? capacity : before_end;
  ch2_output output = {decoder->bytes + offset, decoder->bytes, first, capacity - first};
  return output;
}

/* The dynamic table's entry `index` (1 is the newest; 1 ≤ index ≤ count). */
static const struct ch2_hpack_entry *entry_at(const ch2_hpack_decoder *decoder, uint32_t index) {
  uint32_t slots = decoder->max_size / 32;
  uint32_t slot = decoder->oldest + decoder->count - index;
  return &decoder->entries[slot >= slots ? slot - slots : slot];
}

/* An entry's name and value, where they are in the ring. */
static text entry_name(const ch2_hpack_decoder *decoder, const struct ch2_hpack_entry *entry) {
  return ring_text(decoder, entry->offset, entry->name_length);
}
static text entry_value(const ch2_hpack_decoder *decoder, const struct ch2_hpack_entry *entry) {
  return ring_text(decoder, ring_offset(decoder, entry->offset + (uint32_t)entry->name_length),
                   entry->value_length);
}

/* Evicts the oldest entry (there is one). */
static void evict_oldest(ch2_hpack_decoder *decoder) {
  const struct ch2_hpack_entry *entry = &decoder->entries[decoder->oldest];
  decoder->size -= (uint32_t)entry->name_length + entry->value_length + 32;
  decoder->count--;
  decoder->oldest = decoder->oldest + 1 == decoder->max_size / 32 ? 0 : decoder->oldest + 1;
}

/* Evicts the oldest entries until `size` more fits (it fits in the table alone). */
static void make_room(ch2_hpack_decoder *decoder, uint32_t size) {
  uint32_t table = decoder->size, count = decoder->count, oldest = decoder->oldest, slots = decoder->max_size / 32;
  while (table + size > decoder->max_size) {
    const struct ch2_hpack_entry *entry = &decoder->entries[oldest];
    table -= (uint32_t)entry->name_length + entry->value_length + 32;
    count--;
    if (++oldest == slots) oldest = 0;
  }
  decoder->size = table;
  decoder->count = count;
  decoder->oldest = oldest;
}

/* Reverses the order of `count` elements of `size` bytes (at most 8) at `base`. */
static void reverse(uint8_t *base, size_t count, size_t size) {
  uint8_t swap[8];
  for (size_t low = 0, high = count; low + 1 < high; low++, high--) {
    memcpy(swap, base + low * size, size);
    memcpy(base + low * size, base + (high - 1) * size, size);
    memcpy(base + (high - 1) * size, swap, size);
  }
}

/* Moves the `count` elements (of `size` bytes) of a ring of `slots` that begin at `start` to the
 * ring's first `count` places, in the same order. */
static void unwrap_ring(uint8_t *base, size_t slots, size_t start, size_t count, size_t size) {
  if (start + count <= slots) {
    memmove(base, base + start * size, count * size);
    return;
  }
  size_t tail = slots - start, head = count - tail; /* [start, slots) then [0, head) */
  memmove(base + head * size, base + start * size, tail * size);
  reverse(base, head, size);
  reverse(base + head * size, tail, size);
  reverse(base, count, size);
}

/* A size update to `size` (§4.3, §6.3): evicts what no longer fits, then lays the rings out for
 * the new size from their starts. */
static void resize(ch2_hpack_decoder *decoder, uint32_t size) {
  while (decoder->size > size) evict_oldest(decoder);
  uint32_t used = 0;
  if (decoder->count > 0) {
    uint32_t start = decoder->entries[decoder->oldest].offset;
    used = decoder->size - 32 * decoder->count;
    unwrap_ring(decoder->bytes, decoder->max_size, start, used, 1);
    unwrap_ring((uint8_t *)decoder->entries, decoder->max_size / 32, decoder->oldest, decoder->count,
                sizeof decoder->entries[0]);
    uint32_t offset = 0;
    for (uint32_t slot = 0; slot < decoder->count; slot++) {
      decoder->entries[slot].offset = (uint16_t)offset;
      offset += (uint32_t)decoder->entries[slot].name_length + decoder->entries[slot].value_length;
    }
  }
  decoder->oldest = 0;
  decoder->byte_head = used; /* less than `size`: the entries' 32 per entry are not in the ring */
  decoder->max_size = size;
}

/* Adds an entry whose name and value (name_length + value_length bytes, which fit the table) were
 * written at byte_head, evicting the oldest entries to make room (§4.4). */
static void add_entry(ch2_hpack_decoder *decoder, size_t name_length, size_t value_length, unsigned field) {
  uint32_t entry_size = (uint32_t)(name_length + value_length) + 32;
  while (decoder->size + entry_size > decoder->max_size) evict_oldest(decoder);
  uint32_t slots = decoder->max_size / 32;
  uint32_t slot = decoder->oldest + decoder->count;
  struct ch2_hpack_entry *entry = &decoder->entries[slot >= slots ? slot - slots : slot];
  entry->offset = (uint16_t)decoder->byte_head;
  entry->name_length = (uint16_t)name_length;
  entry->value_length = (uint16_t)value_length;
  entry->field = (uint8_t)field;
  decoder->count++;
  decoder->size += entry_size;
  decoder->byte_head = ring_offset(decoder, decoder->byte_head + (uint32_t)(name_length + value_length));
}

/* Writes `name` at byte_head. A static name is copied whole; a dynamic entry's name (whose bytes
 * may be among those overwritten) byte by byte, forwards: it lies before byte_head in the ring and
 * ends before byte_head does, so no byte of it is overwritten before it is read. */
static void put_name(ch2_hpack_decoder *decoder, text name, int from_table) {
  uint32_t at = decoder->byte_head;
  size_t length = name.first_length + name.second_length;
  if (!from_table) {
    ch2_output output = ring_output(decoder, at, length);
    copy_text(output.first, output.first_capacity, name);
    if (output.second_capacity > 0) copy_bytes(output.second, name.first + output.first_capacity, output.second_capacity);
    return;
  }
  for (size_t i = 0; i < length; i++) {
    decoder->bytes[at] = i < name.first_length ? name.first[i] : name.second[i - name.first_length];
    at = at + 1 == decoder->max_size ? 0 : at + 1;
  }
}

/* A literal field with incremental indexing (§6.2.1): its name (`name_literal`, or else `name`, an
 * indexed name with its `field`) and `value` are written into the table, and an entry added when
 * it fits (an entry larger than the table empties it, §4.4); the value is recorded from there. */
static ch2_status insert_field(ch2_hpack_decoder *decoder, field_recorder *recorder, const string_literal *name_literal,
                               text name, int name_from_table, unsigned field, string_literal value) {
  size_t table = decoder->max_size, name_length, value_length = 0;
  ch2_status status;
  if (name_literal != NULL) {
    status = decode_string(decoder, *name_literal, ring_output(decoder, decoder->byte_head, table), &name_length);
    if (status != CH2_OK) return status;
  } else {
    name_length = name.first_length + name.second_length;
    if (name_length + 32 <= table) put_name(decoder, name, name_from_table);
  }
  int fits = name_length + 32 <= table;
  if (fits) {
    uint32_t value_offset = ring_offset(decoder, decoder->byte_head + (uint32_t)name_length);
    status = decode_string(decoder, value, ring_output(decoder, value_offset, table - name_length - 32), &value_length);
    if (status != CH2_OK) return status;
    fits = name_length + value_length + 32 <= table;
  }
  if (!fits) {
    recorder->resized = 1;
    while (decoder->count > 0) evict_oldest(decoder);
    if (name_literal != NULL) field = field_of_literal(*name_literal);
    return record_literal(decoder, recorder, field, value);
  }
  if (name_literal != NULL) field = field_of_text(ring_text(decoder, decoder->byte_head, name_length));
  add_entry(decoder, name_length, value_length, field);
  recorder->inserted++;
  recorder->inserted_size += (uint32_t)(name_length + value_length) + 32;
  record_text(recorder, field, entry_value(decoder, entry_at(decoder, 1)));
  return CH2_OK;
}

/* ---- representations (§6) ------------------------------------------------------------------------ */

/* An indexed header field (§6.1). */
static ch2_status indexed_field(ch2_hpack_decoder *decoder, block_cursor *cursor, field_recorder *recorder) {
  uint32_t index;
  ch2_status status = read_integer(cursor, 7, &index);
  if (status != CH2_OK) return status;
  if (index == 0) return CH2_HPACK_BAD_INDEX;
  if (index <= STATIC_ENTRIES) {
    const struct static_entry *entry = &static_table[index];
    record_text(recorder, entry->field, plain_text(entry->value, entry->value_length));
    return CH2_OK;
  }
  index -= STATIC_ENTRIES;
  if (index > decoder->count) return CH2_HPACK_BAD_INDEX;
  recorder->named_dynamic = 1;
  const struct ch2_hpack_entry *entry = entry_at(decoder, index);
  record_text(recorder, entry->field, entry_value(decoder, entry));
  return CH2_OK;
}

/* A literal header field (§6.2) whose name index has a `prefix_bits`-bit prefix: with incremental
 * indexing (`indexing`), without indexing or never indexed. */
static ch2_status literal_field(ch2_hpack_decoder *decoder, block_cursor *cursor, field_recorder *recorder,
                                unsigned prefix_bits, int indexing) {
  uint32_t index;
  ch2_status status = read_integer(cursor, prefix_bits, &index);
  if (status != CH2_OK) return status;
  string_literal name_literal = {NULL, 0, 0}, value;
  text name = plain_text("", 0);
  unsigned field = FIELD_NONE;
  if (index == 0) {
    status = read_literal(cursor, &name_literal);
  } else if (index <= STATIC_ENTRIES) {
    const struct static_entry *entry = &static_table[index];
    name = plain_text(entry->name, entry->name_length);
    field = entry->field;
  } else if (index - STATIC_ENTRIES <= decoder->count) {
    const struct ch2_hpack_entry *entry = entry_at(decoder, index - STATIC_ENTRIES);
    recorder->named_dynamic = 1;
    name = entry_name(decoder, entry);
    field = entry->field;
  } else {
    status = CH2_HPACK_BAD_INDEX;
  }
  if (status == CH2_OK) status = read_literal(cursor, &value);
  if (status != CH2_OK) return status;
  if (indexing) {
    return insert_field(decoder, recorder, index == 0 ? &name_literal : NULL, name, index > STATIC_ENTRIES, field, value);
  }
  if (index == 0) field = field_of_literal(name_literal);
  return field == FIELD_NONE ? CH2_OK : record_literal(decoder, recorder, field, value);
}

/* A dynamic table size update (§6.3), followed up to the size kept here whatever SETTINGS said: the
 * decoding side's SETTINGS_HEADER_TABLE_SIZE bounds it, but a setting may not be read yet when the
 * update comes (sent by a thread preempted before its hook read it, or in an h2c upgrade request's
 * HTTP2-Settings header, read after the answer by a client that reads on another thread), and the
 * peer's decoder is the one to refuse an update beyond it. */
static ch2_status size_update(ch2_hpack_decoder *decoder, block_cursor *cursor) {
  uint32_t size;
  ch2_status status = read_integer(cursor, 5, &size);
  if (status != CH2_OK) return status;
  if (size > CH2_HPACK_TABLE_SIZE) return CH2_TABLE_TOO_LARGE;
  if (size != decoder->max_size) resize(decoder, size);
  return CH2_OK;
}

/* ---- replaying the last block -------------------------------------------------------------------- */

/* A block decodes to the same fields and inserts the same entries each time it comes when it has no
 * size update, every entry it inserts fits, and either it names no entry of the dynamic table or
 * it inserts none (then the table it reads is the one it left, unchanged: no other block came in
 * between). The entries it inserted are the table's newest, in the order they came, and it can be
 * replayed from them. Kept when those entries take at most half the table, so that inserting
 * copies of them evicts none of them (and the copies' bytes never overlap theirs).
 *
 * A block that differs replays the fields it begins with alike, as far as they name no entry of
 * the dynamic table (nor does a size update come before them): those fields read nothing the
 * table holds, so they say what they said, and insert copies of the kept block's first entries.
 * nginx's responses differ from the one before from their content-length on: :status, server,
 * date and content-type replay. Where each field of the kept block ends is kept for that, with
 * what the block had inserted and said up to there. */

/* How many bytes `a` and `b` (`length` each) begin with alike. */
static size_t common_prefix(const uint8_t *a, const uint8_t *b, size_t length) {
  size_t i = 0;
  for (; i + 8 <= length; i += 8) {
    uint64_t x, y;
    memcpy(&x, a + i, 8);
    memcpy(&y, b + i, 8);
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    if (x != y) return i + (size_t)(__builtin_ctzll(x ^ y) >> 3);
#else
    if (x != y) return i + (size_t)(__builtin_clzll(x ^ y) >> 3);
#endif
  }
  while (i < length && a[i] == b[i]) i++;
  return i;
}

/* Empties the fields but those `kept` names (a bit per FIELD_*; 0: all of them, ch2_fields_clear):
 * a block replaying the kept block's first fields keeps what they said (the decoder's fields are
 * the kept block's). */
static void clear_fields_except(ch2_fields *fields, unsigned kept) {
  if (!(kept & 1u << FIELD_STATUS)) fields->status = 0;
  if (!(kept & 1u << FIELD_GRPC_STATUS)) fields->grpc_status = -1;
  if (!(kept & 1u << FIELD_METHOD)) fields->method_length = 0, fields->method_truncated = 0;
  if (!(kept & 1u << FIELD_SCHEME)) fields->scheme_length = 0;
  if (!(kept & 1u << FIELD_CONTENT_TYPE)) fields->content_type_length = 0, fields->content_type_truncated = 0;
  if (!(kept & (1u << FIELD_AUTHORITY | 1u << FIELD_HOST))) fields->authority_length = 0, fields->authority_truncated = 0;
  if (!(kept & 1u << FIELD_PATH)) fields->path_length = 0, fields->path_truncated = 0, fields->path_huffman = 0;
  if (!(kept & 1u << FIELD_GRPC_MESSAGE)) fields->grpc_message_length = 0, fields->grpc_message_truncated = 0;
}

/* Keeps the block just decoded (`length` bytes at `block`; what it said is in decoder->fields) to
 * replay, with where its first `prefixes` fields end (written in `replay_prefixes` as they were
 * decoded). */
static void keep_for_replay(ch2_hpack_decoder *decoder, const field_recorder *recorder, const uint8_t *block,
                            size_t length, unsigned prefixes) {
  if (recorder->resized || length > CH2_HPACK_REPLAY_BYTES || 2 * recorder->inserted_size > decoder->max_size) return;
  memcpy(decoder->replay_block, block, length);
  decoder->replay_length = (uint32_t)length;
  decoder->replay_inserts = (uint16_t)recorder->inserted; /* at most CH2_HPACK_MAX_ENTRIES */
  decoder->replay_size = (uint16_t)recorder->inserted_size; /* at most CH2_HPACK_TABLE_SIZE / 2 */
  decoder->replay_whole = !(recorder->named_dynamic && recorder->inserted > 0);
  decoder->replay_run = recorder->inserted;
  decoder->replay_prefix_count = (uint8_t)prefixes;
  decoder->replay_names_table = recorder->named_dynamic;
}

/* Copies `length` bytes of the byte ring from `from` to `to`, ranges that do not overlap, in up to
 * three pieces: either side may wrap at the ring's end. */
static void copy_in_ring(ch2_hpack_decoder *decoder, uint32_t from, uint32_t to, uint32_t length) {
  while (length > 0) {
    uint32_t piece = length;
    if (piece > decoder->max_size - from) piece = decoder->max_size - from;
    if (piece > decoder->max_size - to) piece = decoder->max_size - to;
    memcpy(decoder->bytes + to, decoder->bytes + from, piece);
    from = ring_offset(decoder, from + piece);
    to = ring_offset(decoder, to + piece);
    length -= piece;
  }
}

/* Inserts copies of the first `inserts` entries the kept block inserted (of RFC size `size`).
 * Those entries are among the table's newest (its first of them is entry replay_inserts), their
 * bytes follow each other from B bytes before byte_head (B: all of the kept block's entries' bytes),
 * so the copies go in at once: the oldest entries evicted until the copies fit (never the kept
 * block's: they take at most half the table), then one copy of their bytes (over free bytes and
 * evicted ones; the ranges do not overlap, as B and the copies' bytes are under half the ring) and
 * their slots written after the newest (at most half the slots). Evicting once, before, leaves the
 * table that evicting before each insertion would (RFC 7541 §4.4): either way the table keeps the
 * newest entries that fit, and each copy fits alone. */
static inline void replay_entries(ch2_hpack_decoder *decoder, uint32_t inserts, uint32_t size) {
  uint32_t slots = decoder->max_size / 32;
  uint32_t kept_bytes = decoder->replay_size - 32 * decoder->replay_inserts, length = size - 32 * inserts;
  make_room(decoder, size);
  copy_in_ring(decoder, ring_offset(decoder, decoder->byte_head + decoder->max_size - kept_bytes), decoder->byte_head,
               length);
  uint32_t source = decoder->oldest + decoder->count - decoder->replay_inserts;
  if (source >= slots) source -= slots;
  uint32_t target = decoder->oldest + decoder->count;
  if (target >= slots) target -= slots;
  struct ch2_hpack_entry *entries = decoder->entries;
  uint32_t ring = decoder->max_size;  /* in locals: the entries' byte stores could alias the decoder */
  for (uint32_t i = 0; i < inserts; i++) {
    struct ch2_hpack_entry entry;
    memcpy(&entry, &entries[source], sizeof entry);
    uint32_t offset = entry.offset + kept_bytes;
    entry.offset = (uint16_t)(offset >= ring ? offset - ring : offset);
    memcpy(&entries[target], &entry, sizeof entry);
    if (++source == slots) source = 0;
    if (++target == slots) target = 0;
  }
  decoder->count += inserts;
  decoder->size += size;
  decoder->byte_head = ring_offset(decoder, decoder->byte_head + length);
}

/* What of the kept block replays for `block` (`length` bytes): all of it (REPLAY_WHOLE), or how
 * many of its first fields (0: none). */
#define REPLAY_WHOLE UINT_MAX
static inline unsigned fields_to_replay(const ch2_hpack_decoder *decoder, const uint8_t *block, size_t length) {
  size_t kept = decoder->replay_length;
  if (kept == 0) return 0;
  if (length == kept && decoder->replay_whole && memcmp(block, decoder->replay_block, length) == 0) return REPLAY_WHOLE;
  size_t alike = common_prefix(block, decoder->replay_block, length < kept ? length : kept);
  unsigned prefixes = 0;
  while (prefixes < decoder->replay_prefix_count && decoder->replay_prefixes[prefixes].end <= alike) prefixes++;
  return prefixes;
}

static void count_clean(ch2_hpack_decoder *decoder, int names_table);

/* Decodes a block with the table (ch2_hpack_decode's work while the table is kept), and when
 * `counting`, counts it towards leaving the table unkept (count_clean). Size updates are allowed
 * only before the block's first field (§4.2). */
static ch2_status decode_with_table(ch2_hpack_decoder *decoder, const uint8_t *block, size_t length, int counting) {
  ch2_fields *fields = &decoder->fields;
  unsigned prefixes = fields_to_replay(decoder, block, length);
  if (prefixes == REPLAY_WHOLE) {
    if (decoder->replay_inserts > 0 && !decoder->replay_steady) {
      replay_entries(decoder, decoder->replay_inserts, decoder->replay_size);
      /* Once the table holds fewer entries than the block and its replays inserted, it holds only
       * theirs: the newest that fit of that block's entries repeated (eviction keeps the newest
       * that fit). Another replay keeps the newest that fit of the same repetition, one copy
       * longer: the same entries. So from then on the table is left as it is (nginx's repeated
       * response: ~300 instructions a block). Any other block decoded ends it. */
      decoder->replay_run += decoder->replay_inserts;
      if (decoder->count < decoder->replay_run) decoder->replay_steady = 1;
    }
    if (counting) count_clean(decoder, decoder->replay_names_table);
    return CH2_OK; /* its fields are the kept block's, as they are */
  }
  field_recorder recorder = {fields, 0, {0}, 0, 0, 0, 0};
  block_cursor cursor = {block, block + length};
  int field_seen = 0;
  if (prefixes > 0) {  /* then `prefixes` counts where the fields replayed or decoded so far end */
    const struct ch2_hpack_prefix *prefix = &decoder->replay_prefixes[prefixes - 1];
    if (prefix->inserts > 0) replay_entries(decoder, prefix->inserts, prefix->size);
    clear_fields_except(fields, prefix->seen);
    recorder.seen = prefix->seen;
    recorder.inserted = prefix->inserts;
    recorder.inserted_size = prefix->size;
    cursor.at += prefix->end;
    field_seen = 1;
    decoder->prefix_fields_replayed += prefixes;
  } else {
    ch2_fields_clear(fields);
  }
  decoder->replay_length = 0;
  decoder->replay_steady = 0;
  while (cursor.at < cursor.end) {
    uint8_t first = *cursor.at;
    ch2_status status;
    if (first & 0x80u) {
      status = indexed_field(decoder, &cursor, &recorder);
    } else if (first & 0x40u) {
      status = literal_field(decoder, &cursor, &recorder, 6, 1);
    } else if (first & 0x20u) {
      status = field_seen ? CH2_HPACK_BAD_SIZE_UPDATE : size_update(decoder, &cursor);
    } else {
      status = literal_field(decoder, &cursor, &recorder, 4, 0);
    }
    if (status != CH2_OK) return status;
    if ((first & 0xe0u) == 0x20u) recorder.resized = 1;
    field_seen |= (first & 0xe0u) != 0x20u;
    /* The prefixes are written in place: those replayed are the same, the others are read no more. */
    if (!recorder.resized && !recorder.named_dynamic && prefixes < CH2_HPACK_REPLAY_PREFIXES) {
      struct ch2_hpack_prefix prefix = {(uint16_t)(cursor.at - block), (uint16_t)recorder.inserted,
                                        (uint16_t)recorder.inserted_size, (uint16_t)recorder.seen};
      memcpy(&decoder->replay_prefixes[prefixes++], &prefix, sizeof prefix);
    }
  }
  keep_for_replay(decoder, &recorder, block, length, prefixes);
  if (counting) count_clean(decoder, recorder.named_dynamic || recorder.resized);
  return CH2_OK;
}

/* ---- the table left unkept ------------------------------------------------------------------------ */

/* Some encoders never name an entry of their table: nginx inserts its responses' server, date,
 * content-type, content-length and last-modified every time and names only static entries. Then the
 * table is of no use to the decoder, and keeping it is most of the work a block costs (~1,400 of
 * ~1,700 instructions for nginx's responses when they differ). So once `clean_needed` blocks in a
 * row named none of it (nor resized it), it is left as it is: each block is only read for its
 * fields (read_without_table), and if it inserts, logged, with the least size its entries can take
 * (a Huffman string of n bytes is at least (8n - 7) / 30 characters long); a block that comes again
 * right after itself is counted on its record, not logged again. The first block that names the
 * table or resizes it (or that the log cannot hold) rebuilds it first: the table as it was, then
 * every logged block decoded into it (rebuild_table). The oldest logged blocks are dropped once the
 * newer ones' entries alone take the whole table, as is the table as it was then: the table keeps
 * the newest entries that fit, so neither could be in it. The fields are the same either way; a
 * Huffman string that no record keeps is checked only if the table is rebuilt.
 *
 * A block read without the table reads again only the fields after those it begins with alike
 * with the last one (`replay_block`): where each of that block's first fields ends is kept, with
 * what they said and the least size of what they inserted, in `replay_prefixes` (`size`). */

/* A status of read_without_table's: the block names the table, or resizes it. */
#define NEEDS_TABLE ((ch2_status)0x100)

/* A logged block's record in `log`, before its bytes: its length, the least size of the entries
 * it inserts, and how many times it came in a row. */
typedef struct log_record {
  uint32_t length, least_size, times;
} log_record;

/* Bytes of dropped blocks the log lets stand before the blocks it holds move to its front. */
#define LOG_SLACK 512u

/* Empties the log: the table is as it was when it was left (or kept again). */
static void empty_log(ch2_hpack_decoder *decoder) {
  decoder->log_start = decoder->log_end = decoder->log_least_size = 0;
  decoder->log_base_gone = 0;
}

/* The least length the string `literal` can decode to. */
static inline uint32_t least_length(string_literal literal) {
  if (!literal.huffman) return literal.length;
  return literal.length == 0 ? 0 : (literal.length * 8 - 7 + 29) / 30;
}

/* Reads `block` without the table from `cursor` on (the fields before it said `recorder->seen` and
 * inserted entries of at least `least` in size; `prefixes` of them are marked): records its
 * fields and sets *least_size to the least size of all the entries it inserts. NEEDS_TABLE when it
 * names an entry of the table or resizes it. */
static ch2_status walk_block(ch2_hpack_decoder *decoder, const uint8_t *block, block_cursor cursor,
                             field_recorder *recorder, uint32_t least, unsigned prefixes, uint32_t *least_size) {
  while (cursor.at < cursor.end) {
    uint8_t first = *cursor.at;
    uint32_t index;
    ch2_status status;
    if (first & 0x80u) {
      status = read_integer(&cursor, 7, &index);
      if (status != CH2_OK) return status;
      if (index == 0) return CH2_HPACK_BAD_INDEX;
      if (index > STATIC_ENTRIES) return NEEDS_TABLE;
      const struct static_entry *entry = &static_table[index];
      record_text(recorder, entry->field, plain_text(entry->value, entry->value_length));
    } else {
      if ((first & 0xe0u) == 0x20u) return NEEDS_TABLE;
      int indexing = (first & 0x40u) != 0;
      status = read_integer(&cursor, indexing ? 6 : 4, &index);
      if (status != CH2_OK) return status;
      if (index > STATIC_ENTRIES) return NEEDS_TABLE;
      string_literal name, value;
      unsigned field;
      uint32_t name_length;
      if (index == 0) {
        status = read_literal(&cursor, &name);
        if (status != CH2_OK) return status;
        field = field_of_literal(name);
        name_length = least_length(name);
      } else {
        field = static_table[index].field;
        name_length = static_table[index].name_length;
      }
      status = read_literal(&cursor, &value);
      if (status != CH2_OK) return status;
      if (indexing) least += 32 + name_length + least_length(value);
      if (field != FIELD_NONE) {
        status = record_literal(decoder, recorder, field, value);
        if (status != CH2_OK) return status;
      }
    }
    if (prefixes < CH2_HPACK_REPLAY_PREFIXES && least <= UINT16_MAX) {
      struct ch2_hpack_prefix prefix = {(uint16_t)(cursor.at - block), 0, (uint16_t)least, (uint16_t)recorder->seen};
      memcpy(&decoder->replay_prefixes[prefixes++], &prefix, sizeof prefix);
    }
  }
  decoder->replay_prefix_count = (uint8_t)prefixes;
  *least_size = least;
  return CH2_OK;
}

/* Drops the oldest logged blocks while the newer ones' entries alone take the whole table. */
static void drop_old_blocks(ch2_hpack_decoder *decoder) {
  while (decoder->log_start < decoder->log_end) {
    log_record oldest;
    memcpy(&oldest, decoder->log + decoder->log_start, sizeof oldest);
    uint32_t size = oldest.least_size * oldest.times;
    if (decoder->log_least_size - size < decoder->max_size) return;
    decoder->log_start += (uint32_t)sizeof oldest + oldest.length;
    decoder->log_least_size -= size;
    decoder->log_base_gone = 1;
  }
}

/* Logs `block` (`length` bytes, entries of at least `least_size`): one more time on the newest
 * record when it is that record's block again (`again`), unless its times take the whole table
 * already: the table then holds that block's entries alone, the same however often it comes.
 * NEEDS_TABLE when the log cannot hold it. */
static ch2_status log_block(ch2_hpack_decoder *decoder, const uint8_t *block, size_t length, uint32_t least_size,
                            int again) {
  if (again && decoder->log_newest < decoder->log_end) {
    log_record newest;
    memcpy(&newest, decoder->log + decoder->log_newest, sizeof newest);
    if (newest.least_size * newest.times >= decoder->max_size) return CH2_OK;
    newest.times++;
    memcpy(decoder->log + decoder->log_newest, &newest, sizeof newest);
  } else {
    size_t need = sizeof(log_record) + length;
    /* The blocks still logged move to the front once the dropped ones before them are as many
     * bytes (and no fewer than LOG_SLACK): a copy of at most a byte for each byte logged, and a
     * log that keeps to twice what it holds rather than sweeping all of its 16 KiB, cache line
     * by cache line, through the blocks of every connection. */
    uint32_t held = decoder->log_end - decoder->log_start;
    if (decoder->log_start >= held + LOG_SLACK || decoder->log_end + need > CH2_HPACK_LOG_BYTES) {
      memmove(decoder->log, decoder->log + decoder->log_start, held);
      decoder->log_end -= decoder->log_start;
      decoder->log_start = 0;
      if (decoder->log_end + need > CH2_HPACK_LOG_BYTES) return NEEDS_TABLE;
    }
    log_record record = {(uint32_t)length, least_size, 1};
    memcpy(decoder->log + decoder->log_end, &record, sizeof record);
    memcpy(decoder->log + decoder->log_end + sizeof record, block, length);
    decoder->log_newest = decoder->log_end;
    decoder->log_end += (uint32_t)need;
  }
  decoder->log_least_size += least_size;
  drop_old_blocks(decoder);
  return CH2_OK;
}

/* Reads a block while the table is not kept (see above). */
static ch2_status read_without_table(ch2_hpack_decoder *decoder, const uint8_t *block, size_t length) {
  uint32_t least;
  int again = 0;
  unsigned prefixes = fields_to_replay(decoder, block, length);
  if (prefixes == REPLAY_WHOLE) {
    least = decoder->last_least_size; /* the last block again: the same fields */
    again = decoder->last_logged;
  } else {
    field_recorder recorder = {&decoder->fields, 0, {0}, 0, 0, 0, 0};
    block_cursor cursor = {block, block + length};
    uint32_t least_before = 0;
    if (prefixes > 0) {
      const struct ch2_hpack_prefix *prefix = &decoder->replay_prefixes[prefixes - 1];
      clear_fields_except(&decoder->fields, prefix->seen);
      recorder.seen = prefix->seen;
      least_before = prefix->size;
      cursor.at += prefix->end;
      decoder->prefix_fields_replayed += prefixes;
    } else {
      ch2_fields_clear(&decoder->fields);
    }
    decoder->replay_length = 0;
    ch2_status status = walk_block(decoder, block, cursor, &recorder, least_before, prefixes, &least);
    if (status != CH2_OK) return status;
    if (length <= CH2_HPACK_REPLAY_BYTES) {
      memcpy(decoder->replay_block, block, length);
      decoder->replay_length = (uint32_t)length;
      decoder->replay_whole = 1; /* (fields_to_replay) read again, it says the same */
      decoder->last_least_size = least;
    }
  }
  decoder->last_logged = least > 0;
  ch2_status status = least > 0 ? log_block(decoder, block, length, least, again) : CH2_OK;
  if (status == CH2_OK) decoder->blocks_logged++;
  return status;
}

/* Keeps the table again: the table as it was when it was left (unless the logged blocks' entries
 * evicted it all), then the logged blocks decoded into it. Twice as many blocks without the table
 * are needed before it is left again. */
static ch2_status rebuild_table(ch2_hpack_decoder *decoder) {
  decoder->lazy = 0;
  decoder->replay_length = 0; /* the block kept is the last read, whose entries are not the table's */
  decoder->table_rebuilds++;
  if (decoder->log_base_gone) decoder->size = decoder->count = decoder->oldest = decoder->byte_head = 0;
  for (uint32_t at = decoder->log_start; at < decoder->log_end;) {
    log_record record;
    memcpy(&record, decoder->log + at, sizeof record);
    for (uint32_t time = 0; time < record.times; time++) {
      ch2_status status = decode_with_table(decoder, decoder->log + at + sizeof record, record.length, 0);
      if (status != CH2_OK) return status;
    }
    at += (uint32_t)sizeof record + record.length;
  }
  empty_log(decoder);
  decoder->clean_blocks = 0;
  if (decoder->clean_needed < 0x4000) decoder->clean_needed *= 2;
  return CH2_OK;
}

/* ch2_hpack_decode while the table is not kept: the block read without it, or if it needs the
 * table, the table rebuilt and the block decoded with it. */
__attribute__((noinline)) static ch2_status decode_without_table(ch2_hpack_decoder *decoder, const uint8_t *block, size_t length) {
  ch2_status status = read_without_table(decoder, block, length);
  if (status != NEEDS_TABLE) return status;
  status = rebuild_table(decoder);
  return status == CH2_OK ? decode_with_table(decoder, block, length, 1) : status;
}

/* A block was decoded with the table, naming it or resizing it (`names_table`) or not: after
 * enough blocks in a row that did not, the table is left as it is. */
static void count_clean(ch2_hpack_decoder *decoder, int names_table) {
  if (names_table) {
    decoder->clean_blocks = 0;
    return;
  }
  if (++decoder->clean_blocks < decoder->clean_needed || !decoder->lazy_allowed) return;
  decoder->lazy = 1;
  empty_log(decoder);
  decoder->last_logged = 0;
  decoder->replay_length = 0; /* compared with the blocks read without the table from now on */
}

/* ---- the interface (chttp2.h) -------------------------------------------------------------------- */

/* See chttp2.h. */
void ch2_fields_clear(ch2_fields *fields) { clear_fields_except(fields, 0); }

/* See chttp2.h: scalars only, so the rings' pages stay untouched until entries come. */
void ch2_hpack_init(ch2_hpack_decoder *decoder) {
  decoder->max_size = 4096;
  decoder->size = 0;
  decoder->count = 0;
  decoder->oldest = 0;
  decoder->byte_head = 0;
  decoder->memo_valid = 0;
  decoder->memo_recent = 0;
  decoder->prefix_fields_replayed = 0;
  decoder->blocks_logged = decoder->table_rebuilds = 0;
  decoder->lazy = 0;
  decoder->lazy_allowed = 1;
  decoder->clean_blocks = 0;
  decoder->clean_needed = 8;
  empty_log(decoder);
  decoder->replay_length = 0;
  decoder->replay_steady = 0;
  ch2_fields_clear(&decoder->fields);
}

/* See chttp2.h. */
ch2_status ch2_hpack_decode(ch2_hpack_decoder *decoder, const uint8_t *block, size_t length) {
  if (length == 0) {
    ch2_fields_clear(&decoder->fields);
    decoder->replay_length = 0; /* the kept (or last) block's fields are gone */
    return CH2_OK;
  }
  if (decoder->lazy) return decode_without_table(decoder, block, length);
  return decode_with_table(decoder, block, length, 1);
}

/* See chttp2.h. */
ch2_status ch2_hpack_keep_table(ch2_hpack_decoder *decoder) {
  return decoder->lazy ? rebuild_table(decoder) : CH2_OK;
}

/* See chttp2.h. */
int ch2_hpack_entry_at(const ch2_hpack_decoder *decoder, uint32_t index, uint8_t *name, size_t name_capacity,
                       size_t *name_length, uint8_t *value, size_t value_capacity, size_t *value_length) {
  if (index == 0 || index > decoder->count) return 0;
  const struct ch2_hpack_entry *entry = entry_at(decoder, index);
  copy_text(name, name_capacity, entry_name(decoder, entry));
  copy_text(value, value_capacity, entry_value(decoder, entry));
  *name_length = entry->name_length;
  *value_length = entry->value_length;
  return 1;
}

/* See chttp2.h. */
int ch2_hpack_memo_holds(const ch2_hpack_decoder *decoder, const uint8_t *bytes, size_t length) {
  if (length == 0 || length > CH2_HPACK_MEMO_ENCODED) return 0;
  string_literal literal = {bytes, (uint32_t)length, 1};
  unsigned slot = 2 * memo_set(bytes, (uint32_t)length);
  return memo_holds(decoder, slot, literal) || memo_holds(decoder, slot + 1, literal);
}
