/* A client that sends its requests on one thread and reads the responses on another, as Java's
 * HttpClient and other NIO clients do, with the worst interleaving made certain: every request's
 * send() returns only after the other thread has read that request's whole response. The program
 * is linked with libhold.so (hold_send.c), whose send() interposes libc's and waits on a pipe after
 * the real send, so a monitor hooking send() here sees the response before the request's bytes.
 *
 * Usage: split_thread_client PORT SIZE... : GET /bytes/SIZE for each SIZE on one connection (HEAD
 * for an hSIZE); prints "ok N" when N responses were read. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

extern int hold_send_fd; /* hold_send.c: read one byte from this fd after each send */

static int connection;
static char **sizes; /* argv from the first SIZE */
static int released[2];
static int responses;

/* Reads one response with a Content-Length (its head alone, answering a HEAD); returns 0 at end of
 * stream or on a malformed head. */
static int read_response(int head_only) {
  char head[4096];
  size_t used = 0;
  char *end = NULL;
  while (!end) {
    ssize_t n = recv(connection, head + used, sizeof head - 1 - used, 0);
    if (n <= 0) return 0;
    used += (size_t)n;
    head[used] = 0;
    end = strstr(head, "\r\n\r\n");
    if (!end && used == sizeof head - 1) return 0;
  }
  const char *length = strcasestr(head, "\r\nContent-Length:");
  if (!length) return 0;
  long remaining = head_only ? 0 : atol(length + 17) - (long)(used - (size_t)(end + 4 - head));
  char body[8192];
  while (remaining > 0) {
    ssize_t n = recv(connection, body, remaining < (long)sizeof body ? (size_t)remaining : sizeof body, 0);
    if (n <= 0) return 0;
    remaining -= n;
  }
  return 1;
}

static void *reader(void *count) {
  for (long i = 0; i < (long)count; i++) {
    if (!read_response(sizes[i][0] == 'h')) break;
    responses++;
    if (write(released[1], "r", 1) != 1) break;
  }
  close(released[1]);
  return NULL;
}

int main(int argc, char **argv) {
  if (argc < 3) return 2;
  struct sockaddr_in address = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(argv[1]))};
  inet_pton(AF_INET, "127.0.0.1", &address.sin_addr);
  connection = socket(AF_INET, SOCK_STREAM, 0);
  if (connection < 0 || connect(connection, (struct sockaddr *)&address, sizeof address) != 0) return perror("connect"), 1;
  if (pipe(released) != 0) return 1;
  hold_send_fd = released[0];
  sizes = argv + 2;
  pthread_t thread;
  pthread_create(&thread, NULL, reader, (void *)(long)(argc - 2));
  for (int i = 2; i < argc; i++) {
    char request[256];
    int head_only = argv[i][0] == 'h';
    int length = snprintf(request, sizeof request, "%s /bytes/%s HTTP/1.1\r\nHost: 127.0.0.1:%s\r\n\r\n",
                          head_only ? "HEAD" : "GET", argv[i] + head_only, argv[1]);
    if (send(connection, request, (size_t)length, 0) != length) return perror("send"), 1;
  }
  pthread_join(thread, NULL);
  close(connection);
  printf("ok %d\n", responses);
  return 0;
}
