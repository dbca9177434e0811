import CNetMonitor
import Glibc
import Synchronization

/// Recent name resolutions, so a connection to an address knows the name it was resolved from
/// and how long that lookup took (the seed articles' DNS phase, joined to the connection).
///
/// Joined by address, and then by thread: of the lookups that returned a connection's address and
/// served no connection yet, the one its own thread made (a client looks up, then connects), so
/// that two threads resolving different names to one address (virtual hosts behind one IP) each
/// keep their own. A lookup's time goes to the first connection to each of its addresses; later
/// ones (an address the client cached) get the name, and no DNS time, since none was spent for
/// them.
///
/// Written by the getaddrinfo hook, read by the connect hook. Both only ever *try* the lock: connect
/// may run in a signal handler, and a fork child inherits the lock in whatever state another
/// thread of the parent left it. A lookup that finds the table busy is simply not remembered.
enum Resolutions {
  struct Entry: BitwiseCopyable {
    var address = PeerAddress()
    var host = FixedText<128>()
    var lookupNanoseconds: UInt64 = 0
    /// The thread that made the lookup (`pthread_self`).
    var thread: UInt = 0
    /// A connection took the lookup's time already.
    var timeTaken = false
  }

  struct Table: ~Copyable {
    static let capacity = 64
    var entries = InlineArray<64, Entry>(repeating: Entry())
    var next = 0
  }

  static let table = Mutex(Table())

  /// The calling thread, as lookups remember it.
  static var currentThread: UInt { UInt(pthread_self()) }

  /// Remembers that `host` resolved to `address` in `lookupNanoseconds`, on `thread`.
  static func remember(_ address: PeerAddress, host: FixedText<128>, lookupNanoseconds: UInt64, thread: UInt) {
    table.withLockIfAvailable { table in
      table.entries[table.next % Table.capacity] = Entry(
        address: address, host: host, lookupNanoseconds: lookupNanoseconds, thread: thread)
      table.next &+= 1
    }
  }

  /// Remembers the answers of a lookup made on `thread` (by the getaddrinfo hook, or by the
  /// injected library before the monitor was loaded).
  static func remember(_ lookup: cnm_dns_record, thread: UInt) {
    let host = lookup.withHost { FixedText<128>($0) }
    lookup.forEachAddress { address in
      remember(address, host: host, lookupNanoseconds: lookup.duration_ns, thread: thread)
    }
  }

  /// The name `address` was resolved from, and the lookup's time when this is the first connection
  /// to take it. Of the resolutions that returned `address`, the most recent of the first kind
  /// there is: this thread's with its time untaken, another thread's with its time untaken (a
  /// resolver thread's: libcurl's, SwiftNIO's), this thread's, another's. nil when none, or when
  /// the table is busy. An IPv4-mapped IPv6 address (a dual-stack socket's) is its IPv4 one, on
  /// either side.
  static func lookUp(_ address: PeerAddress) -> (host: FixedText<128>, lookupNanoseconds: UInt64?)? {
    let wanted = address.unmapped
    let thread = currentThread
    return table.withLockIfAvailable { table -> (host: FixedText<128>, lookupNanoseconds: UInt64?)? in
      var best = -1
      var bestRank = 0
      var index = table.next
      for _ in 0..<Table.capacity {
        index &-= 1
        let slot = (index % Table.capacity + Table.capacity) % Table.capacity
        let entry = table.entries[slot]
        guard entry.address.unmapped.sameHost(as: wanted) else { continue }
        let rank = (entry.timeTaken ? 0 : 2) + (entry.thread == thread ? 2 : 1)
        if rank > bestRank {
          (best, bestRank) = (slot, rank)
          if rank == 4 { break }
        }
      }
      guard best >= 0 else { return nil }
      let entry = table.entries[best]
      table.entries[best].timeTaken = true
      return (entry.host, entry.timeTaken ? nil : entry.lookupNanoseconds)
    } ?? nil
  }
}
