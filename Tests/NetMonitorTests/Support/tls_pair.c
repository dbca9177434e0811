/* A TLS client and server in one process, over a loopback TCP connection with non-blocking ends,
 * through the shared libssl: a handshake, then ROUNDS keep-alive HTTP/1.1 exchanges of different
 * sizes, each side's calls SSL_read/SSL_write in even rounds and SSL_read_ex/SSL_write_ex in odd
 * ones. Every call's result and errno (set to a sentinel before it) are printed, and so are the
 * reads that would block, so that a run under `elfhook run` can be compared with a plain one line
 * for line. With `raw`, the exchanges are bytes that are no HTTP (a binary protocol over TLS), of
 * the same sizes. Usage: tls_pair CERTIFICATE KEY ROUNDS [raw]. Exits 0 when every exchange
 * arrived whole. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define SENTINEL 4242

static int connected_pair(int *client, int *server) {
  struct sockaddr_in address = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t length = sizeof address;
  int listener = socket(AF_INET, SOCK_STREAM, 0);
  if (listener < 0 || bind(listener, (struct sockaddr *)&address, length) != 0 || listen(listener, 1) != 0 ||
      getsockname(listener, (struct sockaddr *)&address, &length) != 0)
    return -1;
  *client = socket(AF_INET, SOCK_STREAM, 0);
  if (*client < 0 || connect(*client, (struct sockaddr *)&address, length) != 0) return -1;
  *server = accept(listener, NULL, NULL);
  close(listener);
  if (*server < 0) return -1;
  int one = 1;
  for (int i = 0; i < 2; i++) {
    int fd = i ? *server : *client;
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  }
  return 0;
}

/* One call's outcome: the result, what moved, SSL_get_error's reason and errno. */
static void report(const char *what, SSL *ssl, int result, size_t moved, int error) {
  int reason = result > 0 ? 0 : SSL_get_error(ssl, result);
  printf("%s result=%d moved=%zu reason=%d errno=%d\n", what, result, moved, reason, error);
}

/* Writes all of `bytes`, with SSL_write or (`ex`) SSL_write_ex. */
static int write_all(SSL *ssl, const char *who, const char *bytes, size_t count, int ex) {
  size_t done = 0;
  while (done < count) {
    size_t moved = 0;
    errno = SENTINEL;
    int result = ex ? SSL_write_ex(ssl, bytes + done, count - done, &moved) : SSL_write(ssl, bytes + done, (int)(count - done));
    int error = errno;
    if (!ex && result > 0) moved = (size_t)result;
    char what[64];
    snprintf(what, sizeof what, "%s %s", who, ex ? "SSL_write_ex" : "SSL_write");
    report(what, ssl, result, moved, error);
    if (moved == 0) return -1;
    done += moved;
  }
  return 0;
}

/* Reads exactly `count` bytes into `buffer`, with SSL_read or (`ex`) SSL_read_ex; after a read
 * that would block, waits for the socket (at most 5 s). */
static int read_exactly(SSL *ssl, const char *who, char *buffer, size_t count, int ex) {
  size_t done = 0;
  for (int attempts = 0; done < count && attempts < 1000; attempts++) {
    size_t moved = 0;
    errno = SENTINEL;
    int result = ex ? SSL_read_ex(ssl, buffer + done, count - done, &moved) : SSL_read(ssl, buffer + done, (int)(count - done));
    int error = errno;
    if (!ex && result > 0) moved = (size_t)result;
    if (moved > 0) {
      char what[64];
      snprintf(what, sizeof what, "%s %s", who, ex ? "SSL_read_ex" : "SSL_read");
      report(what, ssl, result, moved, error);
      done += moved;
    } else if (SSL_get_error(ssl, result) == SSL_ERROR_WANT_READ) {
      struct pollfd readable = {.fd = SSL_get_fd(ssl), .events = POLLIN};
      if (poll(&readable, 1, 5000) != 1) return -1;
    } else {
      report("failed", ssl, result, moved, error);
      return -1;
    }
  }
  return done == count ? 0 : -1;
}

/* A read with nothing to read: WANT_READ, and errno as the socket's read left it. */
static void read_nothing(SSL *ssl, const char *who) {
  char byte;
  errno = SENTINEL;
  int result = SSL_read(ssl, &byte, 1);
  int error = errno;
  char what[64];
  snprintf(what, sizeof what, "%s SSL_read (nothing to read)", who);
  report(what, ssl, result, 0, error);
}

int main(int argc, char **argv) {
  if (argc != 4 && !(argc == 5 && strcmp(argv[4], "raw") == 0)) {
    fprintf(stderr, "usage: tls_pair CERTIFICATE KEY ROUNDS [raw]\n");
    return 2;
  }
  int rounds = atoi(argv[3]), raw = argc == 5;
  SSL_CTX *server_context = SSL_CTX_new(TLS_server_method());
  SSL_CTX *client_context = SSL_CTX_new(TLS_client_method());
  if (!server_context || !client_context || SSL_CTX_use_certificate_file(server_context, argv[1], SSL_FILETYPE_PEM) != 1 ||
      SSL_CTX_use_PrivateKey_file(server_context, argv[2], SSL_FILETYPE_PEM) != 1) {
    fprintf(stderr, "tls_pair: cannot set up the contexts\n");
    return 1;
  }
  int client_fd, server_fd;
  if (connected_pair(&client_fd, &server_fd) != 0) {
    perror("tls_pair: loopback connection");
    return 1;
  }
  SSL *client = SSL_new(client_context), *server = SSL_new(server_context);
  SSL_set_fd(client, client_fd);
  SSL_set_fd(server, server_fd);
  SSL_set_connect_state(client);
  SSL_set_accept_state(server);
  int client_done = 0, server_done = 0;
  for (int attempts = 0; !(client_done && server_done) && attempts < 100000; attempts++) {
    if (!client_done) client_done = SSL_do_handshake(client) == 1;
    if (!server_done) server_done = SSL_do_handshake(server) == 1;
  }
  if (!client_done || !server_done) {
    fprintf(stderr, "tls_pair: the handshake did not end\n");
    return 1;
  }
  printf("handshake over\n");
  read_nothing(client, "client");
  for (int round = 0; round < rounds; round++) {
    int ex = round % 2;
    char request[256], response[8192 + 256], received[sizeof response];
    int request_length = snprintf(request, sizeof request, "GET /item/%d?size=%d HTTP/1.1\r\nHost: pair\r\nX-Round: %d\r\n\r\n",
                                  round, 100 + round * 700, round);
    int body = 100 + round * 700 > 8192 ? 8192 : 100 + round * 700;
    int head = snprintf(response, sizeof response, "HTTP/1.1 %d OK\r\nContent-Length: %d\r\n\r\n", round % 3 ? 200 : 201, body);
    memset(response + head, 'a' + round % 26, (size_t)body);
    if (raw) { /* the same sizes, no HTTP: a binary protocol's messages */
      memset(request, 0x01, (size_t)request_length);
      memset(response, 0x02, (size_t)head);
    }
    if (write_all(client, "client", request, (size_t)request_length, ex) != 0 ||
        read_exactly(server, "server", received, (size_t)request_length, ex) != 0 ||
        memcmp(received, request, (size_t)request_length) != 0 ||
        write_all(server, "server", response, (size_t)(head + body), ex) != 0 ||
        read_exactly(client, "client", received, (size_t)(head + body), ex) != 0 ||
        memcmp(received, response, (size_t)(head + body)) != 0) {
      fprintf(stderr, "tls_pair: exchange %d did not arrive whole\n", round);
      return 1;
    }
    read_nothing(server, "server");
  }
  read_nothing(client, "client");
  SSL_free(client);
  SSL_free(server);
  close(client_fd);
  close(server_fd);
  printf("%d exchanges\n", rounds);
  return 0;
}
