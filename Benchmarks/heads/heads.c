/* What the hooks' head readers (CShims/CNetMonitor/simple_heads.c) cost a request and its
 * response, counted by scripts/bench-heads with callgrind in read_pair alone:
 *   heads WORKLOAD MODE ROUNDS
 * WORKLOAD: `curl-nginx` (curl's request, nginx's response, as in scripts/bench-traffic: the
 * target, X-Request-Id, Content-Length and ETag change) or `browser-api` (a browser's request of
 * 12 header lines, an API server's response of 11: the target, Date, Content-Length and
 * X-Request-Id change). MODE: `alone` (every head read as a connection's first) or `after` (each
 * read after the last on its connection, as the hooks do). Every round's heads differ from the
 * round before's. Prints how many heads were accepted: all of them. */
#include "cnm_simple_heads.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static cnm_simple_request last_request;
static cnm_simple_response last_response;
static unsigned char request_bytes[CNM_SIMPLE_HEAD_CAPACITY], response_bytes[CNM_SIMPLE_HEAD_CAPACITY];

static int make_heads(int browser, int round, char *request, char *response, int *response_length) {
  int request_length;
  if (browser) {
    request_length = snprintf(request, 512,
        "GET /api/items/%d?page=%d HTTP/1.1\r\nHost: app.example.test\r\n"
        "User-Agent: Mozilla/5.0 (X11; Linux x86_64; rv:120.0) Gecko/20100101 Firefox/120.0\r\n"
        "Accept: application/json\r\nAccept-Language: en-US,en;q=0.5\r\nAccept-Encoding: gzip, deflate, br\r\n"
        "Referer: https://app.example.test/items\r\nCookie: session=abc123; theme=dark\r\n"
        "Sec-Fetch-Dest: empty\r\nSec-Fetch-Mode: cors\r\nSec-Fetch-Site: same-origin\r\nConnection: keep-alive\r\n\r\n",
        round * 7919 % 1000, round % 17);
    *response_length = snprintf(response, 600,
        "HTTP/1.1 200 OK\r\nServer: envoy\r\nDate: Thu, 26 Nov 2026 13:%02d:%02d GMT\r\n"
        "Content-Type: application/json; charset=utf-8\r\nContent-Length: %d\r\nConnection: keep-alive\r\n"
        "Vary: Accept-Encoding\r\nCache-Control: private, max-age=0\r\nX-Request-Id: 5f0c%08x-7d2e-4b1a\r\n"
        "Strict-Transport-Security: max-age=31536000; includeSubDomains\r\nX-Content-Type-Options: nosniff\r\n"
        "X-Frame-Options: DENY\r\n\r\n{}",
        round / 60000 % 60, round / 1000 % 60, 200 + round * 37 % 3000, round * 2654435761u);
  } else {
    request_length = snprintf(request, 512,
        "GET /v/%03d.bin?page=%d&session=%08x HTTP/1.1\r\nHost: 127.0.0.1:18574\r\nUser-Agent: curl/7.88.1\r\n"
        "Accept: */*\r\nX-Request-Id: r-%d\r\n\r\n",
        round * 7919 % 200, round % 997, round * 2654435761u, round);
    int size = 512 + round * 7919 % 200 * 7680 / 199;
    *response_length = snprintf(response, 600,
        "HTTP/1.1 200 OK\r\nServer: nginx/1.22.1\r\nDate: Thu, 26 Nov 2026 13:%02d:%02d GMT\r\n"
        "Content-Type: application/octet-stream\r\nContent-Length: %d\r\n"
        "Last-Modified: Thu, 26 Nov 2026 10:06:44 GMT\r\nConnection: keep-alive\r\nETag: \"6b0804b4-%x\"\r\n"
        "Accept-Ranges: bytes\r\n\r\nbody",
        round / 60000 % 60, round / 1000 % 60, size, size);
  }
  return request_length;
}

/* The pair, read as the hooks read it: what callgrind counts. */
__attribute__((noinline)) int read_pair(const char *request, int request_length, const char *response,
                                        int response_length, int alone) {
  if (alone) last_request.length = 0, last_response.length = 0;
  return cnm_read_simple_request((const unsigned char *)request, (size_t)request_length, &last_request,
                                 request_bytes) +
         cnm_read_simple_response((const unsigned char *)response, (size_t)response_length, &last_response,
                                  response_bytes);
}

int main(int argc, char **argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: heads curl-nginx|browser-api alone|after ROUNDS\n");
    return 2;
  }
  int browser = strcmp(argv[1], "browser-api") == 0, alone = strcmp(argv[2], "alone") == 0, rounds = atoi(argv[3]);
  static char request[512], response[600];
  long accepted = 0;
  for (int round = 0; round < rounds; round++) {
    int response_length, request_length = make_heads(browser, round, request, response, &response_length);
    accepted += read_pair(request, request_length, response, response_length, alone);
  }
  printf("%ld of %d heads accepted\n", accepted, 2 * rounds);
  return accepted == 2 * rounds ? 0 : 1;
}
