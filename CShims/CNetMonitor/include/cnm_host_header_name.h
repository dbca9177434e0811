/* cnm_host_header_name.h — the name a client connection goes by when no lookup and no TLS server
 * name named it: its first request's Host (or HTTP/2 :authority) (host_header_name.c). One rule for
 * the monitor (Sources/NetMonitor/Recorder/HostHeaderName.swift) and the injected library's light
 * clients (CShims/CElfHookPreload/clients.c). */
#ifndef CNM_HOST_HEADER_NAME_H
#define CNM_HOST_HEADER_NAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The length of the name part of the Host value `host` (`length` bytes; brackets kept around an
 * IPv6 literal) when it names the server at `peer_port`: the target is a path, and the Host's
 * port (or the scheme's default, 443 over TLS, else 80) is the peer's. 0 when it does not. */
size_t cnm_host_header_name_length(const unsigned char *host, size_t length, bool target_is_path, uint16_t peer_port,
                                   bool is_tls);

#endif
