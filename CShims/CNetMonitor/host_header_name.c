/* The server name a request's Host gives its connection (cnm_host_header_name.h). A forward
 * proxy's requests carry their origin's Host (and an absolute or CONNECT target), not the proxy's:
 * hence the path and the port. */
#include "cnm_host_header_name.h"

size_t cnm_host_header_name_length(const unsigned char *host, size_t length, bool target_is_path, uint16_t peer_port,
                                   bool is_tls) {
  if (!target_is_path || length == 0) return 0;
  /* The port follows the last colon after an IPv6 literal's closing bracket, if any. */
  size_t literal_end = 0;
  for (size_t i = length; i > 0; i--) {
    if (host[i - 1] == ']') {
      literal_end = i;
      break;
    }
  }
  size_t name_end = length;
  for (size_t i = length; i > literal_end; i--) {
    if (host[i - 1] == ':') {
      name_end = i - 1;
      break;
    }
  }
  if (name_end == 0) return 0;
  uint32_t port = is_tls ? 443 : 80;
  if (name_end < length) {
    size_t digits = length - name_end - 1;
    if (digits == 0 || digits > 5) return 0;
    port = 0;
    for (size_t i = name_end + 1; i < length; i++) {
      if (host[i] < '0' || host[i] > '9') return 0;
      port = port * 10 + (uint32_t)(host[i] - '0');
    }
  }
  return port == peer_port ? name_end : 0;
}
