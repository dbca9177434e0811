/* HTTP/2 directions the hooks read themselves (cnetmonitor.h). Once Swift found a plaintext
 * direction to be HTTP/2 and took the connection's state, its bytes need nothing of Swift's
 * socket path (which decides, holds and routes a direction's first bytes): the hook counts them
 * and hands them to the frame reader, which calls Swift back only for a stream's request head and
 * its record. The TLS hooks hand a decided direction's plaintext over the same way. The calls come from the hooks of one direction, after the original moved the bytes;
 * nothing here touches errno, allocates or locks. */
#include "chttp2.h"
#include "cnetmonitor.h"
#include "cnm_records.h"

static size_t connection_offset;
static cnm_h2_stopped_callback on_stopped;

void cnm_set_h2_reading(size_t offset, cnm_h2_stopped_callback stopped) {
  connection_offset = offset;
  on_stopped = stopped;
}

/* Reads `count` bytes of a direction, in `buffer` or `vector`, with the connection's entry as the
 * streams' context. Swift linked the state before it made the direction HTTP/2; the close unlinks
 * it after the last call. */
static inline void read_direction(cnm_connection_head *head, bool requests, const void *buffer,
                                  const struct iovec *vector, int vector_count, size_t count) {
  uint64_t address = __atomic_load_n((const uint64_t *)((const unsigned char *)head + connection_offset),
                                     __ATOMIC_ACQUIRE);
  ch2_connection *connection = (ch2_connection *)(uintptr_t)address;
  if (!connection) return;
  uint64_t now = cnm_call_time();
  ch2_status status = vector ? ch2_connection_read_vector(connection, requests, vector, vector_count, 0, count, now, head)
                             : ch2_connection_read(connection, requests, buffer, count, now, head);
  if (status != CH2_OK) on_stopped(head, requests, (int)status);
}

void cnm_h2_read(cnm_connection_head *head, bool received, bool requests, const void *buffer,
                 const struct iovec *vector, int vector_count, ssize_t result) {
  cnm_count_bytes(head, received, (uint64_t)result);
  read_direction(head, requests, buffer, vector, vector_count, (size_t)result);
}

void cnm_h2_read_plaintext(cnm_connection_head *head, bool requests, const void *buffer, size_t count) {
  if (buffer) read_direction(head, requests, buffer, NULL, 0, count);
}
