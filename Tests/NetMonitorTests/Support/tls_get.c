/* tls_get: one HTTPS GET with OpenSSL, for the tests of OpenSSL linked into the executable
 * (TLSStackTests): built at test time against libssl.a/libcrypto.a, so its calls to SSL_connect,
 * SSL_write and SSL_read are direct, reached by no GOT slot. Unstripped, the functions are in
 * its .symtab (the inline hooks find them there); stripped, they are nowhere (TLS read on the
 * wire only).
 *   tls_get PORT PATH CA_FILE   prints the response (head and body) to stdout; exit 0 on success. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

int main(int argc, char **argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: tls_get PORT PATH CA_FILE\n");
    return 2;
  }
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in address = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(argv[1]))};
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (fd < 0 || connect(fd, (struct sockaddr *)&address, sizeof address) != 0) {
    perror("connect");
    return 1;
  }
  SSL_CTX *context = SSL_CTX_new(TLS_client_method());
  if (!context || SSL_CTX_load_verify_locations(context, argv[3], NULL) != 1) return 1;
  SSL_CTX_set_verify(context, SSL_VERIFY_PEER, NULL);
  SSL *ssl = SSL_new(context);
  SSL_set_fd(ssl, fd);
  SSL_set_tlsext_host_name(ssl, "localhost");
  if (SSL_connect(ssl) != 1) {
    ERR_print_errors_fp(stderr);
    return 1;
  }
  char request[512];
  int length = snprintf(request, sizeof request, "GET %s HTTP/1.1\r\nHost: localhost:%s\r\nConnection: close\r\n\r\n",
                        argv[2], argv[1]);
  if (SSL_write(ssl, request, length) != length) return 1;
  char buffer[4096];
  int count;
  while ((count = SSL_read(ssl, buffer, sizeof buffer)) > 0) fwrite(buffer, 1, (size_t)count, stdout);
  SSL_free(ssl);
  SSL_CTX_free(context);
  close(fd);
  return 0;
}
