/* As many HTTP/1.1 exchanges per second as one thread can make, for the recorder under overload
 * (scripts/bench-overload):
 *
 *   load keepalive|connections SECONDS
 *
 * The process is both ends, on 127.0.0.1: a client socket sends "GET /n HTTP/1.1", the server
 * socket reads it and answers "200 OK" with a 2-byte body, the client reads the answer. Injected,
 * every exchange is two http records (the client's and the server's). `keepalive`: one connection
 * for every exchange. `connections`: a new connection per exchange (connect, accept, exchange,
 * close both), so two connection records more per exchange.
 * Prints "exchanges=N seconds=S" on stdout. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec / 1e9;
}

static void die(const char *what) {
  perror(what);
  exit(2);
}

static int listener;
static struct sockaddr_in address;

static void open_pair(int *client, int *server) {
  *client = socket(AF_INET, SOCK_STREAM, 0);
  if (*client < 0 || connect(*client, (struct sockaddr *)&address, sizeof address) != 0) die("connect");
  *server = accept(listener, NULL, NULL);
  if (*server < 0) die("accept");
  int one = 1, error = 0;
  socklen_t length = sizeof error;
  setsockopt(*client, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  setsockopt(*server, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  /* A client checks its connect; this also makes the program import getsockopt, which
   * libElfHookPreload.so's connect hook needed (it crashed without; see docs/monitor.md). */
  if (getsockopt(*client, SOL_SOCKET, SO_ERROR, &error, &length) != 0 || error != 0) die("SO_ERROR");
}

/* Reads until `end` (a suffix of the message) has arrived. */
static void read_message(int fd, char *buffer, size_t size, size_t expected) {
  size_t have = 0;
  while (have < expected) {
    ssize_t n = recv(fd, buffer + have, size - have, 0);
    if (n <= 0) die("recv");
    have += (size_t)n;
  }
}

static void exchange(int client, int server, long n) {
  char request[128], buffer[256];
  static const char response[] = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Type: text/plain\r\n\r\nok";
  int length = snprintf(request, sizeof request, "GET /%ld HTTP/1.1\r\nHost: bench.local\r\n\r\n", n % 1000);
  if (send(client, request, (size_t)length, 0) != length) die("send request");
  read_message(server, buffer, sizeof buffer, (size_t)length);
  if (send(server, response, sizeof response - 1, 0) != (ssize_t)(sizeof response - 1)) die("send response");
  read_message(client, buffer, sizeof buffer, sizeof response - 1);
}

int main(int argc, char **argv) {
  if (argc != 3 || (strcmp(argv[1], "keepalive") != 0 && strcmp(argv[1], "connections") != 0) || atof(argv[2]) <= 0) {
    fprintf(stderr, "usage: load keepalive|connections SECONDS\n");
    return 2;
  }
  int keepalive = strcmp(argv[1], "keepalive") == 0;
  double seconds = atof(argv[2]);
  listener = socket(AF_INET, SOCK_STREAM, 0);
  address = (struct sockaddr_in){.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t length = sizeof address;
  if (listener < 0 || bind(listener, (struct sockaddr *)&address, length) != 0 || listen(listener, 64) != 0 ||
      getsockname(listener, (struct sockaddr *)&address, &length) != 0)
    die("listen on 127.0.0.1");
  int client = -1, server = -1;
  if (keepalive) open_pair(&client, &server);
  double start = now_s(), end = start + seconds, elapsed;
  long n = 0;
  for (;;) {
    if (!keepalive) open_pair(&client, &server);
    exchange(client, server, n++);
    if (!keepalive) {
      close(client);
      close(server);
    }
    if ((n & 63) == 0 && now_s() >= end) break;
  }
  elapsed = now_s() - start;
  if (keepalive) {
    close(client);
    close(server);
  }
  close(listener);
  printf("exchanges=%ld seconds=%.3f\n", n, elapsed);
  return 0;
}
