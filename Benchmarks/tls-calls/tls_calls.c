/* What the TLS hooks add to one SSL_write / SSL_read (or gnutls_record_send / _recv) on a tracked
 * connection (scripts/bench-tls): a TLS client and server in one process over a TCP pair on
 * 127.0.0.1, the server's handshake on a thread of its own, then ROUNDS × (the client
 * writes 64 bytes, the server reads them) in run_loop, which callgrind counts alone
 * (--toggle-collect=run_loop). The bytes are no HTTP: their reader gives up at once, so what is
 * counted is the hooks' own work (finding the connection, counting the plaintext), not parsing.
 * Built three ways: against the shared libssl (GOT hooks), libssl.a (OpenSSL linked into the
 * executable: inline hooks, found in its .symtab), or with -DUSE_GNUTLS against libgnutls.
 *
 *   tls_calls CERT KEY ROUNDS   prints ns_per_call=N (a call: one write or one read), the timed
 *                               loop run once untimed first (rounds / 10 + 1) */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <pthread.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#ifdef USE_GNUTLS
#include <gnutls/gnutls.h>
typedef gnutls_session_t session;
#else
#include <openssl/ssl.h>
typedef SSL *session;
#endif

static void die(const char *what) {
  fprintf(stderr, "tls_calls: %s failed\n", what);
  exit(2);
}

/* A connected TCP pair on 127.0.0.1: the client's end and the accepted one. */
static void tcp_pair(int *client, int *server) {
  int listener = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in address = {.sin_family = AF_INET};
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof address;
  if (listener < 0 || bind(listener, (struct sockaddr *)&address, sizeof address) != 0 || listen(listener, 1) != 0 ||
      getsockname(listener, (struct sockaddr *)&address, &length) != 0)
    die("listen");
  *client = socket(AF_INET, SOCK_STREAM, 0);
  if (*client < 0 || connect(*client, (struct sockaddr *)&address, sizeof address) != 0) die("connect");
  *server = accept(listener, NULL, NULL);
  if (*server < 0) die("accept");
  close(listener);
}


static int handshake(session s);
static void *run_handshake(void *s) { return handshake(s) ? s : NULL; }

/* The server's handshake on a thread, the client's on this one. */
static void handshake_both(session client, session server) {
  pthread_t thread;
  void *result = NULL;
  if (pthread_create(&thread, NULL, run_handshake, server) != 0) die("pthread_create");
  if (!handshake(client)) die("client handshake");
  pthread_join(thread, &result);
  if (!result) die("server handshake");
}

#ifdef USE_GNUTLS
static void set_up(const char *cert, const char *key, int client_fd, int server_fd, session *client, session *server) {
  gnutls_certificate_credentials_t server_credentials, client_credentials;
  gnutls_certificate_allocate_credentials(&server_credentials);
  gnutls_certificate_allocate_credentials(&client_credentials);
  if (gnutls_certificate_set_x509_key_file(server_credentials, cert, key, GNUTLS_X509_FMT_PEM) < 0) die("key file");
  gnutls_init(client, GNUTLS_CLIENT);
  gnutls_init(server, GNUTLS_SERVER);
  gnutls_set_default_priority(*client);
  gnutls_set_default_priority(*server);
  gnutls_credentials_set(*client, GNUTLS_CRD_CERTIFICATE, client_credentials);
  gnutls_credentials_set(*server, GNUTLS_CRD_CERTIFICATE, server_credentials);
  gnutls_transport_set_int(*client, client_fd);
  gnutls_transport_set_int(*server, server_fd);
  handshake_both(*client, *server);
}
static int handshake(session s) { return gnutls_handshake(s) == 0; }
#define WRITE(s, buffer, count) gnutls_record_send(s, buffer, count)
#define READ(s, buffer, count) gnutls_record_recv(s, buffer, count)
#else
static void set_up(const char *cert, const char *key, int client_fd, int server_fd, session *client, session *server) {
  SSL_CTX *server_context = SSL_CTX_new(TLS_server_method());
  SSL_CTX *client_context = SSL_CTX_new(TLS_client_method());
  if (SSL_CTX_use_certificate_chain_file(server_context, cert) != 1 ||
      SSL_CTX_use_PrivateKey_file(server_context, key, SSL_FILETYPE_PEM) != 1)
    die("key file");
  *client = SSL_new(client_context);
  *server = SSL_new(server_context);
  SSL_set_fd(*client, client_fd);
  SSL_set_fd(*server, server_fd);
  SSL_set_connect_state(*client);
  SSL_set_accept_state(*server);
  handshake_both(*client, *server);
}
static int handshake(session s) { return SSL_do_handshake(s) == 1; }
#define WRITE(s, buffer, count) SSL_write(s, buffer, count)
#define READ(s, buffer, count) SSL_read(s, buffer, count)
#endif

__attribute__((noinline)) void run_loop(long rounds, session client, session server) {
  char out[64], in[64];
  memset(out, 'x', sizeof out);
  for (long i = 0; i < rounds; i++) {
    if (WRITE(client, out, sizeof out) != (int)sizeof out) die("write");
    long got = 0;
    while (got < (long)sizeof in) {
      long count = READ(server, in + got, sizeof in - (size_t)got);
      if (count <= 0) die("read");
      got += count;
    }
  }
}

int main(int argc, char **argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: tls_calls CERT KEY ROUNDS\n");
    return 2;
  }
  int client_fd, server_fd;
  tcp_pair(&client_fd, &server_fd);
  session client, server;
  set_up(argv[1], argv[2], client_fd, server_fd, &client, &server);
  long rounds = atol(argv[3]);
  run_loop(rounds / 10 + 1, client, server); /* warm-up: caches, page faults */
  struct timespec start, end;
  clock_gettime(CLOCK_MONOTONIC, &start);
  run_loop(rounds, client, server);
  clock_gettime(CLOCK_MONOTONIC, &end);
  double ns = (double)(end.tv_sec - start.tv_sec) * 1e9 + (double)(end.tv_nsec - start.tv_nsec);
  printf("ns_per_call=%.1f\n", ns / (double)rounds / 2);
  return 0;
}
