/* The HTTP/2 frame reader (RFC 9113 §3.4, §4, §6): one direction's bytes, in any split, read into
 * one event per frame. Every step depends only on the bytes before, never on where a read ended,
 * so a byte sequence gives the same events however it is cut. */
#include "chttp2.h"

#include <string.h>

static const char client_preface[CH2_PREFACE_LENGTH + 1] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/* A big-endian 32-bit number. */
static uint32_t read_u32(const uint8_t *bytes) {
  return (uint32_t)bytes[0] << 24 | (uint32_t)bytes[1] << 16 | (uint32_t)bytes[2] << 8 | bytes[3];
}

/* Whether the current frame's type carries a header block fragment. */
static int is_block_frame(uint8_t type) {
  return type == CH2_HEADERS || type == CH2_PUSH_PROMISE || type == CH2_CONTINUATION;
}

/* Checks that the current block frame's fragment (`fragment_length` bytes) fits in the block. */
static ch2_status check_fragment(const ch2_reader *reader, uint32_t fragment_length) {
  return fragment_length > CH2_BLOCK_BYTES - reader->block_length ? CH2_BLOCK_TOO_LARGE : CH2_OK;
}

/* Starts the frame whose 9-byte `header` was just read: checks what its header alone can break
 * and sets up the reading of its payload. */
static ch2_status begin_frame(ch2_reader *reader, const uint8_t *header) {
  reader->length = (uint32_t)header[0] << 16 | (uint32_t)header[1] << 8 | header[2];
  reader->type = header[3];
  reader->flags = header[4];
  reader->stream_id = read_u32(header + 5) & 0x7fffffffu;
  reader->payload_seen = 0;
  reader->control_seen = 0;
  reader->pad_length = 0;
  reader->prefix_length = 0;
  reader->header_table_size = UINT32_MAX;
  uint8_t type = reader->type, flags = reader->flags;
  /* A block awaits its CONTINUATION: nothing else may come (§6.10). */
  if (reader->block_open != (type == CH2_CONTINUATION)) return CH2_BAD_FRAME;
  if (type == CH2_CONTINUATION && reader->stream_id != reader->block_stream_id) return CH2_BAD_FRAME;
  switch (type) {
  case CH2_HEADERS:
  case CH2_PUSH_PROMISE:
    if (reader->stream_id == 0) return CH2_BAD_FRAME;
    reader->block_length = 0;
    reader->block_stream_id = reader->stream_id;
    reader->block_end_stream = type == CH2_HEADERS && (flags & CH2_FLAG_END_STREAM);
    reader->block_is_push = type == CH2_PUSH_PROMISE;
    reader->promised_stream_id = 0;
    reader->prefix_length = (flags & CH2_FLAG_PADDED) ? 1 : 0;
    if (type == CH2_PUSH_PROMISE) reader->prefix_length += 4;
    else if (flags & CH2_FLAG_PRIORITY) reader->prefix_length += 5;
    if (reader->length < reader->prefix_length) return CH2_BAD_FRAME;
    break;
  case CH2_RST_STREAM:
    if (reader->length != 4) return CH2_BAD_FRAME;
    break;
  case CH2_SETTINGS:
    if ((flags & CH2_FLAG_ACK) ? reader->length != 0 : reader->length % 6 != 0) return CH2_BAD_FRAME;
    break;
  case CH2_GOAWAY:
    if (reader->length < 8) return CH2_BAD_FRAME;
    break;
  default: break;
  }
  if (is_block_frame(type)) {
    reader->block_open = !(flags & CH2_FLAG_END_HEADERS);
    /* Unpadded, the fragment's length is known now; padded, once the pad length is read. */
    if (!(reader->flags & CH2_FLAG_PADDED) || type == CH2_CONTINUATION) {
      return check_fragment(reader, reader->length - reader->prefix_length);
    }
  }
  return CH2_OK;
}

/* Reads `count` payload bytes of a HEADERS, PUSH_PROMISE or CONTINUATION frame: the pad length,
 * priority and promised stream before the fragment, the fragment (appended to the block), the
 * padding after it. */
static ch2_status read_block_payload(ch2_reader *reader, const uint8_t *bytes, uint32_t count) {
  uint32_t i = 0;
  int padded = reader->type != CH2_CONTINUATION && (reader->flags & CH2_FLAG_PADDED);
  for (; i < count && reader->payload_seen < reader->prefix_length; i++) {
    uint32_t offset = reader->payload_seen++;
    if (padded && offset == 0) {
      reader->pad_length = bytes[i];
      if ((uint32_t)reader->prefix_length + reader->pad_length > reader->length) return CH2_BAD_FRAME;
      ch2_status status = check_fragment(reader, reader->length - reader->prefix_length - reader->pad_length);
      if (status != CH2_OK) return status;
    } else if (reader->type == CH2_PUSH_PROMISE) {
      reader->promised_stream_id = (reader->promised_stream_id << 8 | bytes[i]) & 0x7fffffffu;
    }
  }
  uint32_t fragment_end = reader->length - reader->pad_length;
  if (i < count && reader->payload_seen < fragment_end) {
    uint32_t take = fragment_end - reader->payload_seen;
    if (take > count - i) take = count - i;
    memcpy(reader->block + reader->block_length, bytes + i, take);
    reader->block_length += take;
    reader->payload_seen += take;
    i += take;
  }
  reader->payload_seen += count - i; /* padding */
  return CH2_OK;
}

/* Reads `count` payload bytes of an RST_STREAM, SETTINGS or GOAWAY frame: the parts kept go
 * through `control`; a SETTINGS entry is taken in each time its 6 bytes are there. */
static void read_control_payload(ch2_reader *reader, const uint8_t *bytes, uint32_t count) {
  uint32_t wanted = reader->type == CH2_SETTINGS ? 6 : reader->type == CH2_GOAWAY ? 8 : 4;
  for (uint32_t i = 0; i < count; i++) {
    if (reader->control_seen < wanted) reader->control[reader->control_seen++] = bytes[i];
    if (reader->type == CH2_SETTINGS && reader->control_seen == 6) {
      if (reader->control[0] == 0 && reader->control[1] == 1) {
        reader->header_table_size = read_u32(reader->control + 2);
      }
      reader->control_seen = 0;
    }
  }
  reader->payload_seen += count;
}

/* Fills `event` for the frame that just ended. */
static void end_frame(ch2_reader *reader, ch2_event *event) {
  uint8_t type = reader->type, flags = reader->flags;
  event->kind = CH2_EVENT_FRAME;
  event->type = type;
  event->flags = flags;
  event->stream_id = reader->stream_id;
  event->frame_bytes = 9 + reader->length;
  switch (type) {
  case CH2_DATA: event->end_stream = flags & CH2_FLAG_END_STREAM; break;
  case CH2_HEADERS:
  case CH2_PUSH_PROMISE:
  case CH2_CONTINUATION:
    if (type == CH2_HEADERS) event->end_stream = flags & CH2_FLAG_END_STREAM;
    if (reader->block_is_push) event->promised_stream_id = reader->promised_stream_id;
    if (flags & CH2_FLAG_END_HEADERS) {
      event->has_block = 1;
      reader->block_at = reader->block;
      event->block_is_push = reader->block_is_push;
      if (type == CH2_CONTINUATION) event->end_stream = reader->block_end_stream;
    }
    break;
  case CH2_RST_STREAM: event->error_code = read_u32(reader->control); break;
  case CH2_SETTINGS: event->header_table_size = reader->header_table_size; break;
  case CH2_GOAWAY:
    event->last_stream_id = read_u32(reader->control) & 0x7fffffffu;
    event->error_code = read_u32(reader->control + 4);
    break;
  default: break;
  }
  reader->header_seen = 0;
  reader->frames++;
}

/* Whether a frame of `type` and `flags` is one whose payload read_payload reads: DATA, or
 * HEADERS neither padded nor with a priority (its payload all fragment). */
static int payload_at_once(uint8_t type, uint8_t flags) {
  return type == CH2_DATA || (type == CH2_HEADERS && !(flags & (CH2_FLAG_PADDED | CH2_FLAG_PRIORITY)));
}

/* Reads at once the frame whose 9-byte header is at `header` and whose payload begins at
 * `payload_bytes` (`available` bytes there) when it is whole there and reading it takes none of the
 * general path's state: a DATA, WINDOW_UPDATE, PING, PRIORITY or unknown frame, or a HEADERS frame
 * that ends its block, neither padded nor with a priority, its fragment fitting in the block (a
 * response's headers and body, a request's headers: most frames). Fills `event` as end_frame
 * would and returns the frame's bytes; 0 when the general path is to read it (it may be an error,
 * which the general path reports). */
static size_t read_frame_at(ch2_reader *reader, const uint8_t *header, const uint8_t *payload_bytes, size_t available,
                            ch2_event *event) {
  uint32_t payload = (uint32_t)header[0] << 16 | (uint32_t)header[1] << 8 | header[2];
  if (available < payload || reader->block_open) return 0;
  uint8_t type = header[3], flags = header[4];
  uint32_t stream_id = read_u32(header + 5) & 0x7fffffffu;
  switch (type) {
  case CH2_HEADERS:
    if (stream_id == 0 || !payload_at_once(type, flags) || !(flags & CH2_FLAG_END_HEADERS) || payload > CH2_BLOCK_BYTES) {
      return 0;
    }
    reader->block_at = payload_bytes; /* read where it is: the block is whole there */
    reader->block_length = payload;
    reader->block_is_push = 0;
    event->has_block = 1;
    event->end_stream = flags & CH2_FLAG_END_STREAM;
    break;
  case CH2_DATA: event->end_stream = flags & CH2_FLAG_END_STREAM; break;
  case CH2_RST_STREAM:
  case CH2_SETTINGS:
  case CH2_PUSH_PROMISE:
  case CH2_GOAWAY:
  case CH2_CONTINUATION: return 0;
  default: break;
  }
  event->kind = CH2_EVENT_FRAME;
  event->type = type;
  event->flags = flags;
  event->stream_id = stream_id;
  event->frame_bytes = 9 + payload;
  reader->frames++;
  return 9 + (size_t)payload;
}

/* read_frame_at for a frame that `bytes` (`length` bytes, at least 9) begins with. */
static size_t read_whole_frame(ch2_reader *reader, const uint8_t *bytes, size_t length, ch2_event *event) {
  return read_frame_at(reader, bytes, bytes + 9, length - 9, event);
}

/* See chttp2.h. */
const char *ch2_status_name(ch2_status status) {
  switch (status) {
  case CH2_OK: return "ok";
  case CH2_BAD_PREFACE: return "bad connection preface";
  case CH2_BAD_FRAME: return "bad frame";
  case CH2_BLOCK_TOO_LARGE: return "header block too large";
  case CH2_HPACK_BAD_INDEX: return "bad HPACK index";
  case CH2_HPACK_BAD_INTEGER: return "bad HPACK integer";
  case CH2_HPACK_BAD_STRING: return "bad HPACK string";
  case CH2_HPACK_BAD_HUFFMAN: return "bad HPACK Huffman code";
  case CH2_HPACK_BAD_SIZE_UPDATE: return "bad HPACK table size update";
  case CH2_TABLE_TOO_LARGE: return "HPACK table larger than kept";
  }
  return "unknown status";
}

/* See chttp2.h. More than the preface's length: whether the preface begins the bytes. */
int ch2_is_preface_prefix(const uint8_t *bytes, size_t length) {
  if (length == 0) return 1;
  return memcmp(bytes, client_preface, length < CH2_PREFACE_LENGTH ? length : CH2_PREFACE_LENGTH) == 0;
}

/* See chttp2.h. */
void ch2_reader_init(ch2_reader *reader, int expect_preface) {
  reader->status = CH2_OK;
  reader->expect_preface = expect_preface != 0;
  reader->preface_seen = 0;
  reader->header_seen = 0;
  reader->type = reader->flags = 0;
  reader->pad_length = reader->prefix_length = 0;
  reader->block_end_stream = reader->block_is_push = reader->block_open = 0;
  reader->control_seen = 0;
  reader->length = reader->payload_seen = reader->stream_id = 0;
  reader->block_stream_id = reader->promised_stream_id = 0;
  reader->header_table_size = UINT32_MAX;
  reader->block_length = 0;
  reader->frames = 0;
  reader->block_at = reader->block;
}

/* ch2_read the general way: the preface first (when expected), then for each frame its 9-byte
 * header, then its payload by type: block frames copy their fragment, control frames keep a few
 * bytes, every other byte is only counted. Out of line, so that ch2_read's common case stays small. */
__attribute__((noinline)) static size_t read_in_parts(ch2_reader *reader, const uint8_t *bytes, size_t length,
                                                      ch2_event *event) {
  size_t at = 0;
  ch2_status status = CH2_OK;
  while (at < length) {
    if (reader->expect_preface && reader->preface_seen < CH2_PREFACE_LENGTH) {
      if (bytes[at++] != (uint8_t)client_preface[reader->preface_seen++]) {
        status = CH2_BAD_PREFACE;
        break;
      }
      continue;
    }
    if (reader->header_seen < 9) {
      const uint8_t *header = bytes + at; /* read in place when whole, else gathered in `header` */
      if (reader->header_seen > 0 || length - at < 9) {
        size_t take = 9u - reader->header_seen;
        if (take > length - at) take = length - at;
        memcpy(reader->header + reader->header_seen, bytes + at, take);
        reader->header_seen = (uint8_t)(reader->header_seen + take);
        at += take;
        if (reader->header_seen < 9) break;
        header = reader->header;
      } else {
        reader->header_seen = 9;
        at += 9;
      }
      status = begin_frame(reader, header);
      if (status != CH2_OK) break;
    } else {
      uint32_t count = reader->length - reader->payload_seen;
      if (count > length - at) count = (uint32_t)(length - at);
      if (is_block_frame(reader->type)) {
        status = read_block_payload(reader, bytes + at, count);
      } else if (reader->type == CH2_RST_STREAM || reader->type == CH2_SETTINGS || reader->type == CH2_GOAWAY) {
        read_control_payload(reader, bytes + at, count);
      } else {
        reader->payload_seen += count;
      }
      at += count;
      if (status != CH2_OK) break;
    }
    if (reader->payload_seen == reader->length) {
      end_frame(reader, event);
      return at;
    }
  }
  if (status != CH2_OK) {
    reader->status = (uint8_t)status;
    event->kind = CH2_EVENT_ERROR;
  }
  return at;
}

/* The payload of such a frame, `length` bytes here (up to what is left of it), read as
 * read_in_parts would: a fragment appended to the block, and the frame's end with its event. A
 * server that writes each frame's header and payload from two buffers (nginx, with writev) has
 * its frames read here. */
static size_t read_payload(ch2_reader *reader, const uint8_t *bytes, size_t length, ch2_event *event) {
  uint32_t left = reader->length - reader->payload_seen;
  uint32_t take = length < left ? (uint32_t)length : left;
  if (reader->type == CH2_HEADERS) {
    memcpy(reader->block + reader->block_length, bytes, take);
    reader->block_length += take;
  }
  reader->payload_seen += take;
  if (reader->payload_seen == reader->length) end_frame(reader, event);
  return take;
}

/* What an event is until a frame ends: nothing, no header table size. */
static const ch2_event no_event = {CH2_EVENT_NONE, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, UINT32_MAX};

/* See chttp2.h. A frame whole in the bytes is read at once (read_whole_frame); a DATA or simple
 * HEADERS frame's header, and then its payload, each at once; any other frame in parts. */
size_t ch2_read(ch2_reader *reader, const uint8_t *bytes, size_t length, ch2_event *event) {
  *event = no_event;
  if (reader->status != CH2_OK || length == 0) return length;
  if (reader->header_seen == 9 && reader->payload_seen < reader->length && payload_at_once(reader->type, reader->flags)) {
    return read_payload(reader, bytes, length, event);
  }
  int between_frames = reader->header_seen == 0 && !(reader->expect_preface && reader->preface_seen < CH2_PREFACE_LENGTH);
  if (between_frames && length >= 9) {
    size_t whole = read_whole_frame(reader, bytes, length, event);
    if (whole > 0) return whole;
    if (payload_at_once(bytes[3], bytes[4])) {
      reader->header_seen = 9;
      ch2_status status = begin_frame(reader, bytes);
      if (status != CH2_OK) {
        reader->status = (uint8_t)status;
        event->kind = CH2_EVENT_ERROR;
        return 9;
      }
      return 9 + read_payload(reader, bytes + 9, length - 9, event);
    }
  }
  return read_in_parts(reader, bytes, length, event);
}

/* See chttp2.h. */
size_t ch2_read_split(ch2_reader *reader, const uint8_t *header, const uint8_t *payload, size_t available,
                      ch2_event *event) {
  *event = no_event;
  if (reader->status != CH2_OK || reader->header_seen != 0 ||
      (reader->expect_preface && reader->preface_seen < CH2_PREFACE_LENGTH))
    return SIZE_MAX;
  size_t whole = read_frame_at(reader, header, payload, available, event);
  return whole > 0 ? whole - 9 : SIZE_MAX;
}
