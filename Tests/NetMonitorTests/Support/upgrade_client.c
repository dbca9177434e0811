/* An h2c client that sends on one thread and reads on another, as Java's HttpClient does, with
 * the worst interleaving made certain: the upgrade request's send() returns only after the other
 * thread has read its 101 and the whole HTTP/2 answer to stream 1 (linked with libhold.so,
 * hold_send.c, so a monitor hooking send() here reads the answer before the request). The
 * request's HTTP2-Settings header announces SETTINGS_HEADER_TABLE_SIZE 16384, which the server's
 * encoder takes up at once with a size update in its first header block. Then, as a client must
 * after the 101, the connection preface, an empty SETTINGS and a second request on stream 3.
 *
 * Usage: upgrade_client PORT : GET /first?size=100 (the upgrade), then GET /second?size=200;
 * prints "ok N" when N streams were answered with their END_STREAM. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

extern int hold_send_fd; /* hold_send.c: read one byte from this fd after each send */

static int connection;
static int released[2];
static int answered;

/* Receives exactly `count` bytes; 0 at end of stream. */
static int receive(unsigned char *bytes, size_t count) {
  for (size_t got = 0; got < count;) {
    ssize_t n = recv(connection, bytes + got, count - got, 0);
    if (n <= 0) return 0;
    got += (size_t)n;
  }
  return 1;
}

/* Reads frames until stream `id` ends (END_STREAM on its HEADERS or DATA); 0 on end of stream. */
static int read_stream(uint32_t id) {
  unsigned char header[9], payload[20000];
  for (;;) {
    if (!receive(header, sizeof header)) return 0;
    size_t length = (size_t)header[0] << 16 | (size_t)header[1] << 8 | header[2];
    uint32_t stream = ((uint32_t)header[5] & 0x7f) << 24 | (uint32_t)header[6] << 16 | (uint32_t)header[7] << 8 | header[8];
    if (length > sizeof payload || !receive(payload, length)) return 0;
    if (stream == id && (header[3] == 0 || header[3] == 1) && (header[4] & 1)) return 1;
  }
}

static void *reader(void *unused) {
  (void)unused;
  /* The 101's head, byte by byte up to its blank line: what follows is HTTP/2. */
  char head[1024];
  size_t used = 0;
  while (used < sizeof head - 1 && (used < 4 || memcmp(head + used - 4, "\r\n\r\n", 4) != 0)) {
    if (!receive((unsigned char *)head + used, 1)) goto done;
    used++;
  }
  head[used] = 0;
  if (strncmp(head, "HTTP/1.1 101 ", 13) != 0 || !read_stream(1)) goto done;
  answered++;
  if (write(released[1], "r", 1) != 1) goto done; /* the upgrade request's send() returns */
  if (read_stream(3)) answered++;
done:
  close(released[1]);
  return NULL;
}

static void send_all(const void *bytes, size_t count) {
  if (send(connection, bytes, count, 0) != (ssize_t)count) perror("send"), exit(1);
}

int main(int argc, char **argv) {
  if (argc != 2) return 2;
  struct sockaddr_in address = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(argv[1]))};
  inet_pton(AF_INET, "127.0.0.1", &address.sin_addr);
  connection = socket(AF_INET, SOCK_STREAM, 0);
  if (connection < 0 || connect(connection, (struct sockaddr *)&address, sizeof address) != 0) return perror("connect"), 1;
  if (pipe(released) != 0) return 1;
  pthread_t thread;
  pthread_create(&thread, NULL, reader, NULL);

  /* SETTINGS_HEADER_TABLE_SIZE (1) = 16384 and SETTINGS_ENABLE_PUSH (2) = 0, in base64url. */
  char request[512];
  int length = snprintf(request, sizeof request,
                        "GET /first?size=100 HTTP/1.1\r\nHost: 127.0.0.1:%s\r\nConnection: Upgrade, HTTP2-Settings\r\n"
                        "Upgrade: h2c\r\nHTTP2-Settings: AAEAAEAAAAIAAAAA\r\n\r\n",
                        argv[1]);
  hold_send_fd = released[0];
  send_all(request, (size_t)length);
  hold_send_fd = -1;

  /* The preface, an empty SETTINGS, and GET /second?size=200 on stream 3: :method GET, :scheme
   * http (indexed), :path and :authority as literals without indexing (names 4 and 1). */
  unsigned char frames[256];
  size_t at = 0;
  memcpy(frames, "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 24), at = 24;
  static const unsigned char settings[9] = {0, 0, 0, 4, 0, 0, 0, 0, 0};
  memcpy(frames + at, settings, 9), at += 9;
  unsigned char block[128];
  size_t block_length = 0;
  char authority[64];
  int authority_length = snprintf(authority, sizeof authority, "127.0.0.1:%s", argv[1]);
  block[block_length++] = 0x82;
  block[block_length++] = 0x86;
  block[block_length++] = 0x04;
  block[block_length++] = 16;
  memcpy(block + block_length, "/second?size=200", 16), block_length += 16;
  block[block_length++] = 0x01;
  block[block_length++] = (unsigned char)authority_length;
  memcpy(block + block_length, authority, (size_t)authority_length), block_length += (size_t)authority_length;
  unsigned char headers[9] = {0, 0, (unsigned char)block_length, 1, 0x05, 0, 0, 0, 3}; /* END_STREAM | END_HEADERS */
  memcpy(frames + at, headers, 9), at += 9;
  memcpy(frames + at, block, block_length), at += block_length;
  send_all(frames, at);

  pthread_join(thread, NULL);
  close(connection);
  printf("ok %d\n", answered);
  return 0;
}
