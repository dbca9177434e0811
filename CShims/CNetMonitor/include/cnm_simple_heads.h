/* The two HTTP/1.x heads the hooks record an exchange from by themselves (simple_heads.c; what
 * they do with them: "simple exchanges" in cnetmonitor.h): an HTTP/1.1 or 1.0 request of any
 * method but CONNECT with no body or one framed by its Content-Length or chunked coding, and an
 * HTTP/1.1 or 1.0 final response with no
 * body or one framed by its Content-Length or chunked coding. Each is read whole (a
 * connection's first), or after the last one read on its connection, of which only the lines that
 * differ. Nothing here allocates, locks or touches errno. */
#ifndef CNM_SIMPLE_HEADS_H
#define CNM_SIMPLE_HEADS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The longest head the hooks read: a browser's request, its cookies or a proxy's X-Forwarded-*
 * lines included, is often over 512 bytes. */
#define CNM_SIMPLE_HEAD_CAPACITY 2048
#define CNM_SIMPLE_METHOD_CAPACITY 15  /* the longest method (HTTPHead.methodCapacity: 16) */
#define CNM_SIMPLE_TARGET_CAPACITY 512 /* the longest target (HTTPHead.targetCapacity: not truncated) */
#define CNM_SIMPLE_HOST_CAPACITY 256   /* the longest Host value (HTTPHead.hostCapacity) */

/* What a head's `Connection` header says, when it is one these parsers read: nothing (no such
 * header), or the one option `keep-alive` or `close`. */
enum { CNM_CONNECTION_UNSAID = 0, CNM_CONNECTION_KEEP_ALIVE = 1, CNM_CONNECTION_CLOSE = 2 };

/* How a simple head frames the body after it: by its one Content-Length, or by its one
 * `Transfer-Encoding: chunked`, never both; or neither. */
typedef struct cnm_simple_framing {
  uint64_t content_length; /* its Content-Length's value (0 without one) */
  uint16_t framed_at;      /* where the line after its Content-Length begins; 0: it has none */
  uint16_t chunked_at;     /* where the line after its `Transfer-Encoding: chunked` begins; 0: none */
} cnm_simple_framing;

/* A simple request head: `METHOD target HTTP/1.1` or `HTTP/1.0` (ApacheBench's, `curl --http1.0`;
 * a method of capital letters, not CONNECT, whose answer starts a tunnel; a target of at most
 * CNM_SIMPLE_TARGET_CAPACITY bytes, which a record holds whole), then header lines,
 * none of them a Transfer-Encoding but one `chunked`, a second Content-Length (or one beside a
 * Transfer-Encoding), a Connection other than keep-alive or close, or a second Connection. Its
 * body, when a Content-Length or the chunked coding frames one, follows it. */
typedef struct cnm_simple_request {
  cnm_simple_framing framing;
  uint16_t length;        /* the head's bytes; 0: none read yet */
  uint16_t target_length; /* the target: bytes method_length + 1 ..< + target_length */
  uint16_t host_offset;   /* the first Host value, trimmed (0, 0: no Host) */
  uint16_t host_length;
  uint16_t connection_at; /* where its Connection value begins */
  uint8_t method_length;  /* the method: bytes 0 ..< method_length */
  uint8_t connection;     /* CNM_CONNECTION_… */
  uint8_t minor_version;  /* 1 or 0: HTTP/1.1 or HTTP/1.0 */
} cnm_simple_request;

/* A simple response head: `HTTP/1.1 ddd` or `HTTP/1.0 ddd` (not 1xx), at most one
 * Content-Length or else one `Transfer-Encoding: chunked`, no Connection other than keep-alive or
 * close. Its version
 * and Connection are not kept: an http record has neither (the exchange's protocol is its
 * request's), and a body of known length, or none, ends where it ends either way. Whether it has
 * a body is its request's and status's to say (no body for HEAD, 204, 304; else its Content-Length
 * or chunked coding frames it: without either, the body runs to the close, which is Swift's). */
typedef struct cnm_simple_response {
  cnm_simple_framing framing;
  uint16_t length; /* the head's bytes; 0: none read yet */
  uint16_t status;
} cnm_simple_response;

/* Read the head at the start of the `available` bytes at `bytes` as a simple request or as a simple
 * response: true and the fields when it is one. */
bool cnm_parse_simple_request(const unsigned char *bytes, size_t available, cnm_simple_request *request)
    __attribute__((visibility("hidden")));
bool cnm_parse_simple_response(const unsigned char *bytes, size_t available, cnm_simple_response *response)
    __attribute__((visibility("hidden")));
/* Whether a blank line (CRLF CRLF) that ends a head ends in the `count` bytes at `bytes` after
 * their first `from` (it may begin in those). */
bool cnm_simple_head_ends(const unsigned char *bytes, size_t from, size_t count) __attribute__((visibility("hidden")));
/* Whether the `count` bytes at `bytes` may begin a simple request head that goes on after them:
 * a method these parsers read and its space, no blank line, fewer than CNM_SIMPLE_HEAD_CAPACITY. */
bool cnm_simple_request_begins(const unsigned char *bytes, size_t count) __attribute__((visibility("hidden")));
/* Reads the request head at the start of the `available` bytes at `bytes` as
 * cnm_parse_simple_request does, and makes it the last one read on the connection (`last`, its
 * bytes at `last_bytes`, CNM_SIMPLE_HEAD_CAPACITY of them; `last->length` 0: none yet). Of its
 * header lines only those that differ from the last request's are read: a client's requests
 * differ in their targets, and in few header lines if any. False, and `last` unchanged, when the
 * request is not simple. */
bool cnm_read_simple_request(const unsigned char *bytes, size_t available, cnm_simple_request *last,
                             unsigned char *last_bytes) __attribute__((visibility("hidden")));
/* Reads the response head at the start of the `available` bytes at `bytes` as
 * cnm_parse_simple_response does, and makes it the last one read on the connection (`last`, its
 * bytes at `last_bytes`, CNM_SIMPLE_HEAD_CAPACITY of them; `last->length` 0: none yet). The last
 * head again costs a compare; of another, only the lines that differ from the last head's are
 * read (a server's heads differ in a few: Date, Content-Length, Last-Modified, ETag). False, and
 * `last` unchanged, when the head is not simple. */
bool cnm_read_simple_response(const unsigned char *bytes, size_t available, cnm_simple_response *last,
                              unsigned char *last_bytes)
    __attribute__((visibility("hidden")));

#endif
