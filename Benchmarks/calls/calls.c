/* What one call costs in ns, plain and with libElfHookPreload.so injected (scripts/bench-calls):
 *
 *   calls plt|read|pingpong ROUNDS
 *
 *   plt       ROUNDS calls of trivial() in libtrivial.so through the PLT: the floor of any call
 *             that goes through a GOT slot (what every hooked call pays before any hook runs)
 *   read      ROUNDS × read(2) of one byte from /dev/zero: a descriptor that is not a connection,
 *             after one connection (the injected library loads the monitor, whose hooks are then in
 *             place, at a process's first connect: a process that never connects has no hooks)
 *   pingpong  ROUNDS × send(2) + recv(2) of one byte over a connected TCP pair on 127.0.0.1
 *             (both ends are tracked connections when the monitor is injected)
 *
 * Prints "KIND ns_per_call=N" on stdout (pingpong: per call, i.e. per send or recv). The timed
 * loop runs once untimed first (warm caches, page faults). Each loop is its own noinline function
 * so that callgrind can count it alone (--toggle-collect=run_*). Single-threaded, like the
 * injected library leaves its host (records go to a shared ring, no thread of its own). */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

int trivial(int value);

static double now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e9 + t.tv_nsec;
}

static void die(const char *what) {
  perror(what);
  exit(2);
}

__attribute__((noinline)) int run_plt(long rounds) {
  int sum = 0;
  for (long i = 0; i < rounds; i++) sum += trivial((int)i);
  return sum;
}

__attribute__((noinline)) void run_read(long rounds, int fd, char *buffer) {
  for (long i = 0; i < rounds; i++)
    if (read(fd, buffer, 1) != 1) die("read /dev/zero");
}

__attribute__((noinline)) void run_pingpong(long rounds, int client, int server, char *buffer) {
  for (long i = 0; i < rounds; i++) {
    if (send(client, buffer, 1, 0) != 1) die("send");
    if (recv(server, buffer, 1, 0) != 1) die("recv");
  }
}

static void loopback_pair(int *client, int *server) {
  int listener = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in address = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t length = sizeof address;
  if (listener < 0 || bind(listener, (struct sockaddr *)&address, length) != 0 || listen(listener, 1) != 0 ||
      getsockname(listener, (struct sockaddr *)&address, &length) != 0)
    die("listen on 127.0.0.1");
  *client = socket(AF_INET, SOCK_STREAM, 0);
  if (*client < 0 || connect(*client, (struct sockaddr *)&address, length) != 0) die("connect");
  *server = accept(listener, NULL, NULL);
  if (*server < 0) die("accept");
  int one = 1, error = 0;
  socklen_t error_length = sizeof error;
  setsockopt(*client, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  /* Also makes this program import getsockopt: libElfHookPreload.so's connect hook calls the
   * original getsockopt, and crashed (SIGILL) in a process that imports connect but not getsockopt
   * (found by this benchmark; see docs/monitor.md). */
  if (getsockopt(*client, SOL_SOCKET, SO_ERROR, &error, &error_length) != 0 || error != 0) die("SO_ERROR");
  close(listener);
}

int main(int argc, char **argv) {
  if (argc != 3 || atol(argv[2]) <= 0) {
    fprintf(stderr, "usage: calls plt|read|pingpong ROUNDS\n");
    return 2;
  }
  const char *kind = argv[1];
  long rounds = atol(argv[2]);
  char buffer[1] = {'x'};
  double start, elapsed;
  long calls = rounds;
  if (strcmp(kind, "plt") == 0) {
    volatile int sink = run_plt(rounds / 10);
    start = now_ns();
    sink = run_plt(rounds);
    elapsed = now_ns() - start;
    (void)sink;
  } else if (strcmp(kind, "read") == 0) {
    int client, server;
    loopback_pair(&client, &server);
    int fd = open("/dev/zero", O_RDONLY);
    if (fd < 0) die("/dev/zero");
    run_read(rounds / 10, fd, buffer);
    start = now_ns();
    run_read(rounds, fd, buffer);
    elapsed = now_ns() - start;
  } else if (strcmp(kind, "pingpong") == 0) {
    int client, server;
    loopback_pair(&client, &server);
    run_pingpong(rounds / 10, client, server, buffer);
    start = now_ns();
    run_pingpong(rounds, client, server, buffer);
    elapsed = now_ns() - start;
    calls = 2 * rounds;
    close(client);
    close(server);
  } else {
    fprintf(stderr, "calls: unknown kind %s\n", kind);
    return 2;
  }
  printf("%s ns_per_call=%.2f\n", kind, elapsed / (double)calls);
  return 0;
}
