import CNetMonitor
import Glibc

// Name resolution: one `dns` record per getaddrinfo call, and the answers remembered so the
// connection to one of them knows its host name and lookup time.

let getaddrinfoHook:
  @convention(c) (
    UnsafePointer<CChar>?, UnsafePointer<CChar>?, UnsafePointer<addrinfo>?,
    UnsafeMutablePointer<UnsafeMutablePointer<addrinfo>?>?
  ) -> Int32 = { node, service, hints, result in
    guard let node, !cnm_guard_active() else {
      return cnm_original().pointee.getaddrinfo!(node, service, hints, result)
    }
    let startUnix = cnm_unix_ns()
    let start = cnm_monotonic_ns()
    let status = cnm_original().pointee.getaddrinfo!(node, service, hints, result)
    let end = cnm_monotonic_ns()
    let error = cnm_errno()
    var lookup = cnm_dns_record()
    cnm_dns_record_fill(&lookup, node, status, error, status == 0 ? result?.pointee : nil, startUnix, end &- start)
    cnm_dns_record_emit(cnm_record_queue(), &lookup)
    Resolutions.remember(lookup, thread: Resolutions.currentThread)
    cnm_set_errno(error)
    return status
  }
