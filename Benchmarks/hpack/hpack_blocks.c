/* What decoding HTTP/2 header blocks costs the hooks (CShims/CHTTP2/hpack.c), for scripts/bench-hpack:
 * the captured blocks of a connection (h2load-nginx.blocks: each line "Q hex" a request's block,
 * "R hex" a response's, in the order each direction sent them), decoded by two decoders, one a
 * direction, as the monitor keeps them; `decode_pair` decodes one request's block and one
 * response's (callgrind collects it alone).
 *
 *   hpack_blocks FILE varied N    N pairs, the connection's pairs in turn (every request differs)
 *   hpack_blocks FILE repeated N  the first pair, then its second pair N times (one request again)
 * Exits 1 when a block does not decode. */
#include "chttp2.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_PAIRS = 64, MAX_BLOCK = 1024 };

static uint8_t requests[MAX_PAIRS][MAX_BLOCK], responses[MAX_PAIRS][MAX_BLOCK];
static size_t request_lengths[MAX_PAIRS], response_lengths[MAX_PAIRS];
static ch2_hpack_decoder request_decoder, response_decoder;

/* The bytes a line's hex spells, into `block`; their count. */
static size_t unhex(const char *hex, uint8_t *block) {
  size_t count = 0;
  unsigned byte;
  while (count < MAX_BLOCK && sscanf(hex, "%2x", &byte) == 1) {
    block[count++] = (uint8_t)byte;
    hex += 2;
  }
  return count;
}

__attribute__((noinline)) static void decode_pair(size_t pair) {
  if (ch2_hpack_decode(&request_decoder, requests[pair], request_lengths[pair]) != CH2_OK ||
      ch2_hpack_decode(&response_decoder, responses[pair], response_lengths[pair]) != CH2_OK) {
    fprintf(stderr, "hpack_blocks: pair %zu does not decode\n", pair);
    exit(1);
  }
}

int main(int argc, char **argv) {
  if (argc != 4 || (strcmp(argv[2], "varied") != 0 && strcmp(argv[2], "repeated") != 0)) {
    fprintf(stderr, "usage: hpack_blocks FILE varied|repeated N\n");
    return 2;
  }
  FILE *file = fopen(argv[1], "r");
  if (!file) {
    perror(argv[1]);
    return 2;
  }
  char line[2 * MAX_BLOCK + 8];
  size_t request_count = 0, response_count = 0;
  while (fgets(line, sizeof line, file)) {
    if (line[0] == 'Q' && request_count < MAX_PAIRS) {
      request_lengths[request_count] = unhex(line + 2, requests[request_count]);
      request_count++;
    } else if (line[0] == 'R' && response_count < MAX_PAIRS) {
      response_lengths[response_count] = unhex(line + 2, responses[response_count]);
      response_count++;
    }
  }
  fclose(file);
  size_t pairs = request_count < response_count ? request_count : response_count;
  if (pairs < 2) {
    fprintf(stderr, "hpack_blocks: fewer than 2 pairs in %s\n", argv[1]);
    return 2;
  }
  ch2_hpack_init(&request_decoder);
  ch2_hpack_init(&response_decoder);
  int varied = strcmp(argv[2], "varied") == 0;
  long rounds = atol(argv[3]);
  for (long round = 0; round < rounds; round++)
    decode_pair(varied ? (size_t)round % pairs : round == 0 ? 0 : 1);
  return 0;
}
