import CNetMonitor
import Glibc

/// Recent name resolutions, so a connection to an address knows the name it was resolved from
/// and how long that lookup took (the seed articles' DNS phase, joined to the connection).
///
/// Joined by address, and then by thread: of the lookups that returned a connection's address, the
/// one its own thread made (a client looks up, then connects), so that two threads resolving
/// different names to one address (virtual hosts behind one IP) each keep their own. A lookup's
/// time goes to the first connection to each of its addresses; later ones (an address the client
/// cached) get the name, and no DNS time, since none was spent for them.
///
/// The table is C's (`cnm_resolutions_*`, resolutions.c): written by the getaddrinfo hook, read by
/// the connect hook, lock-free on both sides, so neither a signal handler, a fork child nor a
/// thread descheduled mid-way can cost another thread its join.
enum Resolutions {
  /// The calling thread, as lookups remember it.
  static var currentThread: UInt { UInt(pthread_self()) }

  /// Remembers the answers of a lookup made on `thread` (by the getaddrinfo hook, or by the
  /// injected library before the monitor was loaded).
  static func remember(_ lookup: cnm_dns_record, thread: UInt) {
    withUnsafePointer(to: lookup) { cnm_resolutions_remember($0, UInt64(thread)) }
  }

  /// The name `address` was resolved from, and the lookup's time when this is the first connection
  /// to take it (`cnm_resolutions_look_up` says which lookup wins). nil when none.
  static func lookUp(_ address: PeerAddress) -> (host: FixedText<128>, lookupNanoseconds: UInt64?)? {
    var wanted = address.cAddress
    var found = cnm_resolution()
    guard cnm_resolutions_look_up(&wanted, UInt64(currentThread), &found) else { return nil }
    let host = withUnsafeBytes(of: found.host) { FixedText<128>(UnsafeRawBufferPointer(rebasing: $0.prefix(Int(found.host_length)))) }
    return (host, found.has_lookup_time ? found.lookup_ns : nil)
  }
}
