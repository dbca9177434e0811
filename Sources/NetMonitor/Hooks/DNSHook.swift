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
    let startUnix = MonotonicClock.unixNow()
    let start = MonotonicClock.now()
    let status = cnm_original().pointee.getaddrinfo!(node, service, hints, result)
    let end = MonotonicClock.now()
    let error = cnm_errno()
    resolved(node, status: status, errno: error, answers: status == 0 ? result?.pointee : nil,
             startUnix: startUnix, nanoseconds: end &- start)
    cnm_set_errno(error)
    return status
  }

private func resolved(
  _ node: UnsafePointer<CChar>, status: Int32, errno: Int32, answers: UnsafeMutablePointer<addrinfo>?,
  startUnix: UInt64, nanoseconds: UInt64
) {
  let host = FixedText<128>(cString: node)
  func describe(_ record: inout RawRecord) {
    record.kind = RawRecord.Kind.dns
    record.startUnixNanoseconds = startUnix
    record.durationNanoseconds = nanoseconds
    record.dnsHost = FixedText<256>(cString: node)
    record.dnsError = status
    record.dnsErrno = status == EAI_SYSTEM ? errno : 0
    var answer = answers
    while let current = answer {
      let address = PeerAddress(current.pointee.ai_addr, length: current.pointee.ai_addrlen)
      answer = current.pointee.ai_next
      guard address.isInternet else { continue }
      var seen = false
      for index in 0..<Int(record.dnsAddressCount) where record.dnsAddresses[index].sameHost(as: address) {
        seen = true
      }
      if seen { continue }
      if record.dnsAddressCount < 8 {
        record.dnsAddresses[Int(record.dnsAddressCount)] = address
        record.dnsAddressCount += 1
      }
      Resolutions.remember(address, host: host, lookupNanoseconds: nanoseconds)
    }
  }
  RawRecord.emit { record in
    record.initialize(to: RawRecord())  // a rare record: cleared whole, then filled by name
    describe(&record.pointee)
  }
}
