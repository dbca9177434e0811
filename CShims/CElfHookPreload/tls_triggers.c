/* The TLS libraries' calls while connections are tracked here (elfhook_preload.h): OpenSSL's
 * handshake, read and write, GnuTLS's, NSS's handshake and NSPR's I/O. A TLS session over a
 * connection the injected library tracks itself (clients.c) must be seen from its first call: its
 * handshake's time, version and ALPN, and its plaintext. So when clients.c sets up, the images that
 * link a TLS library get a trigger in their GOT slots for these functions (the engine, CElfHook,
 * images loaded now only; a TLS library loaded later is seen from its bytes, on the monitor's load). While
 * any connection is tracked here, an OpenSSL or GnuTLS trigger goes to tls_clients.c, and NSS's
 * load the monitor, which takes the connections over, and go through the monitor's hook; otherwise
 * a trigger calls the function its slot held.
 *
 * Not exported under the names themselves, as libc's are: a TLS library is often loaded into a
 * local scope (python's _ssl module, dlopen RTLD_LOCAL) where an export would be bound ahead of it
 * and could not find it again. */
#include "elfhook_preload.h"

#include "elfhook.h"

#include <errno.h>
#include <link.h>
#include <string.h>

/* The function a call of `which` goes to: the monitor's hook when it must see it; else the one the
 * slot held (the engine's `replaced`, elfhook_forwarders[which].next). */
static void *through(elfhook_export which, const void *caller) {
  if (elfhook_clients_live()) return elfhook_route(which, caller);
  return __atomic_load_n(&elfhook_forwarders[which].next, __ATOMIC_ACQUIRE);
}

#define TLS_TRIGGER(result, name, index, failure, parameters, arguments)              \
  result elfhook_forward_##name parameters {                                          \
    result(*function) parameters = through(index, __builtin_return_address(0));       \
    if (!function) {                                                                  \
      errno = ENOSYS;                                                                 \
      return failure;                                                                 \
    }                                                                                 \
    return function arguments;                                                        \
  }

/* OpenSSL's and GnuTLS's, while connections are tracked here, go to tls_clients.c, which records a
 * session over one of them itself. -1 (0 for the _ex calls; GNUTLS_E_INTERNAL_ERROR, -59, for
 * GnuTLS's) is a failure its callers check. `fields` are the call's arguments, as an
 * elfhook_tls_call's members. */
#define FIELDS(...) __VA_ARGS__
#define RECORDED_TRIGGER(result, name, index, failure, parameters, fields, arguments)          \
  result elfhook_forward_##name parameters {                                                  \
    if (elfhook_clients_live()) {                                                             \
      elfhook_tls_call call = {.which = index, FIELDS fields};                                \
      return (result)elfhook_tls_client_call(&call, __builtin_return_address(0));             \
    }                                                                                         \
    result(*function) parameters = __atomic_load_n(&elfhook_forwarders[index].next, __ATOMIC_ACQUIRE); \
    if (!function) {                                                                          \
      errno = ENOSYS;                                                                         \
      return failure;                                                                         \
    }                                                                                         \
    return function arguments;                                                                \
  }

RECORDED_TRIGGER(int, SSL_do_handshake, ELFHOOK_SSL_DO_HANDSHAKE, -1, (void *ssl), (.session = ssl), (ssl))
RECORDED_TRIGGER(int, SSL_connect, ELFHOOK_SSL_CONNECT, -1, (void *ssl), (.session = ssl), (ssl))
RECORDED_TRIGGER(int, SSL_accept, ELFHOOK_SSL_ACCEPT, -1, (void *ssl), (.session = ssl), (ssl))
RECORDED_TRIGGER(int, SSL_read, ELFHOOK_SSL_READ, -1, (void *ssl, void *buffer, int count),
                 (.session = ssl, .buffer = buffer, .count = (size_t)count), (ssl, buffer, count))
RECORDED_TRIGGER(int, SSL_read_ex, ELFHOOK_SSL_READ_EX, 0, (void *ssl, void *buffer, size_t count, size_t *read),
                 (.session = ssl, .buffer = buffer, .count = count, .done = read), (ssl, buffer, count, read))
RECORDED_TRIGGER(int, SSL_write, ELFHOOK_SSL_WRITE, -1, (void *ssl, const void *buffer, int count),
                 (.session = ssl, .buffer = (void *)buffer, .count = (size_t)count), (ssl, buffer, count))
RECORDED_TRIGGER(int, SSL_write_ex, ELFHOOK_SSL_WRITE_EX, 0,
                 (void *ssl, const void *buffer, size_t count, size_t *written),
                 (.session = ssl, .buffer = (void *)buffer, .count = count, .done = written),
                 (ssl, buffer, count, written))
RECORDED_TRIGGER(int, gnutls_handshake, ELFHOOK_GNUTLS_HANDSHAKE, -59, (void *session), (.session = session),
                 (session))
RECORDED_TRIGGER(ssize_t, gnutls_record_send, ELFHOOK_GNUTLS_RECORD_SEND, -59,
                 (void *session, const void *data, size_t size),
                 (.session = session, .buffer = (void *)data, .count = size), (session, data, size))
RECORDED_TRIGGER(ssize_t, gnutls_record_send2, ELFHOOK_GNUTLS_RECORD_SEND2, -59,
                 (void *session, const void *data, size_t size, size_t pad, unsigned flags),
                 (.session = session, .buffer = (void *)data, .count = size, .pad = pad, .flags = flags),
                 (session, data, size, pad, flags))
RECORDED_TRIGGER(ssize_t, gnutls_record_recv, ELFHOOK_GNUTLS_RECORD_RECV, -59, (void *session, void *data, size_t size),
                 (.session = session, .buffer = data, .count = size), (session, data, size))
RECORDED_TRIGGER(ssize_t, gnutls_record_recv_seq, ELFHOOK_GNUTLS_RECORD_RECV_SEQ, -59,
                 (void *session, void *data, size_t size, unsigned char *sequence),
                 (.session = session, .buffer = data, .count = size, .sequence = sequence),
                 (session, data, size, sequence))
/* NSS and NSPR: SECFailure and -1. */
TLS_TRIGGER(int, SSL_ForceHandshake, ELFHOOK_SSL_FORCE_HANDSHAKE, -1, (void *fd), (fd))
TLS_TRIGGER(int, SSL_ForceHandshakeWithTimeout, ELFHOOK_SSL_FORCE_HANDSHAKE_WITH_TIMEOUT, -1,
            (void *fd, uint32_t timeout), (fd, timeout))
TLS_TRIGGER(int32_t, PR_Read, ELFHOOK_PR_READ, -1, (void *fd, void *buffer, int32_t amount), (fd, buffer, amount))
TLS_TRIGGER(int32_t, PR_Write, ELFHOOK_PR_WRITE, -1, (void *fd, const void *buffer, int32_t amount),
            (fd, buffer, amount))
TLS_TRIGGER(int32_t, PR_Recv, ELFHOOK_PR_RECV, -1,
            (void *fd, void *buffer, int32_t amount, int32_t flags, uint32_t timeout),
            (fd, buffer, amount, flags, timeout))
TLS_TRIGGER(int32_t, PR_Send, ELFHOOK_PR_SEND, -1,
            (void *fd, const void *buffer, int32_t amount, int32_t flags, uint32_t timeout),
            (fd, buffer, amount, flags, timeout))

/* Whether `image` links a TLS library (a DT_NEEDED entry naming one): only such an image calls
 * one through its GOT, so only its slots are read (the engine reads every other image's slots
 * otherwise: ~0.45 M instructions in curl). The dynamic linker relocated the string table's address
 * in place where it could (x86_64, aarch64); where it did not, the address is below the bias. */
static int links_a_tls_library(const elfhook_image *image, void *context) {
  (void)context;
  static const char *const libraries[] = {"libssl.so", "libgnutls.so", "libnss3.so", "libssl3.so", "libnspr4.so"};
  const ElfW(Ehdr) *header = image->header;
  const ElfW(Phdr) *segments = (const ElfW(Phdr) *)((const char *)header + header->e_phoff);
  const ElfW(Dyn) *dynamic = NULL;
  for (ElfW(Half) i = 0; i < header->e_phnum && !dynamic; i++) {
    if (segments[i].p_type == PT_DYNAMIC) dynamic = (const ElfW(Dyn) *)(image->load_bias + segments[i].p_vaddr);
  }
  uintptr_t strings = 0;
  for (const ElfW(Dyn) *entry = dynamic; entry && entry->d_tag != DT_NULL && !strings; entry++) {
    if (entry->d_tag == DT_STRTAB) strings = entry->d_un.d_ptr;
  }
  if (!strings) return 0;
  if (strings < image->load_bias) strings += image->load_bias;
  for (const ElfW(Dyn) *entry = dynamic; entry->d_tag != DT_NULL; entry++) {
    if (entry->d_tag != DT_NEEDED) continue;
    const char *needed = (const char *)strings + entry->d_un.d_val;
    for (size_t i = 0; i < sizeof libraries / sizeof libraries[0]; i++) {
      if (strncmp(needed, libraries[i], strlen(libraries[i])) == 0) return 1;
    }
  }
  return 0;
}

bool elfhook_tls_triggers_set(void) {
  struct rebinding triggers[ELFHOOK_HOOKED_EXPORTS - ELFHOOK_SSL_DO_HANDSHAKE];
  size_t count = 0;
  for (elfhook_export which = ELFHOOK_SSL_DO_HANDSHAKE; which < ELFHOOK_HOOKED_EXPORTS; which++) {
    triggers[count++] = (struct rebinding){elfhook_forwarders[which].name, elfhook_forwarders[which].self,
                                           &elfhook_forwarders[which].next};
  }
  elfhook_options options = {.filter = links_a_tls_library, .flags = ELFHOOK_CURRENT_IMAGES_ONLY};
  return elfhook_rebind(triggers, count, &options, NULL) == ELFHOOK_OK;
}
