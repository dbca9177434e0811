/* The dns record (cnm_records.h): filled and queued in C, by the getaddrinfo hook of the monitor
 * and by the injected library before the monitor is loaded. */
#include "cnetmonitor.h"
#include "cnm_records.h"

#include <netdb.h>
#include <netinet/in.h>
#include <string.h>
#include <time.h>

uint64_t cnm_monotonic_ns(void) {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
}

__thread uint64_t cnm_handed_call_time __attribute__((tls_model("initial-exec")));

uint64_t cnm_unix_ns(void) {
  struct timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  return (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
}

bool cnm_address_read(const struct sockaddr *socket_address, socklen_t length, cnm_address *address) {
  memset(address, 0, sizeof *address);
  if (!socket_address || length < sizeof(sa_family_t)) return false;
  address->family = socket_address->sa_family;
  if (socket_address->sa_family == AF_INET && length >= sizeof(struct sockaddr_in)) {
    const struct sockaddr_in *ipv4 = (const struct sockaddr_in *)socket_address;
    address->port = ntohs(ipv4->sin_port);
    memcpy(address->bytes, &ipv4->sin_addr, 4);
    return true;
  }
  if (socket_address->sa_family == AF_INET6 && length >= sizeof(struct sockaddr_in6)) {
    const struct sockaddr_in6 *ipv6 = (const struct sockaddr_in6 *)socket_address;
    address->port = ntohs(ipv6->sin6_port);
    memcpy(address->bytes, &ipv6->sin6_addr, 16);
    return true;
  }
  return false;
}

static bool same_host(const cnm_address *a, const cnm_address *b) {
  return a->family == b->family && memcmp(a->bytes, b->bytes, a->family == AF_INET ? 4 : 16) == 0;
}

void cnm_dns_record_fill(cnm_dns_record *record, const char *host, int status, int system_errno,
                         const struct addrinfo *answers, uint64_t start_unix_ns, uint64_t duration_ns) {
  record->kind = CNM_RECORD_DNS;
  record->pid = cnm_current_pid();
  record->start_unix_ns = start_unix_ns;
  record->duration_ns = duration_ns;
  record->error = status;
  record->system_errno = status == EAI_SYSTEM ? system_errno : 0;
  size_t length = host ? strnlen(host, CNM_DNS_HOST_SIZE) : 0;
  memcpy(record->host, host ? host : "", length);
  record->host_length = (uint16_t)length;
  record->address_count = 0;
  for (const struct addrinfo *answer = status == 0 ? answers : NULL;
       answer && record->address_count < CNM_DNS_ADDRESSES; answer = answer->ai_next) {
    cnm_address address;
    if (!cnm_address_read(answer->ai_addr, answer->ai_addrlen, &address)) continue;
    bool seen = false;
    for (uint8_t i = 0; i < record->address_count && !seen; i++) seen = same_host(&record->addresses[i], &address);
    if (!seen) record->addresses[record->address_count++] = address;
  }
}

bool cnm_dns_record_emit(cnm_queue *queue, const cnm_dns_record *record) {
  if (!queue) return false;
  uint64_t ticket;
  void *slot = cnm_queue_reserve(queue, &ticket);
  if (!slot) {
    cnm_queue_count_drop(queue);
    return false;
  }
  /* Only the record's own bytes: the name is copied at its length, the rest of the slot is left. */
  size_t used = offsetof(cnm_dns_record, host) + record->host_length;
  memcpy(slot, record, used);
  cnm_queue_publish(queue, ticket);
  return true;
}
