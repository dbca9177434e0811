import CNetMonitor
import Synchronization

/// Recent name resolutions, so a connection to an address knows the name it was resolved from
/// and how long that lookup took (the seed articles' DNS phase, joined to the connection).
///
/// Written by the getaddrinfo hook, read by the connect hook. Both only ever *try* the lock: connect
/// may run in a signal handler, and a fork child inherits the lock in whatever state another
/// thread of the parent left it. A lookup that finds the table busy is simply not remembered.
enum Resolutions {
  struct Entry: BitwiseCopyable {
    var address = PeerAddress()
    var host = FixedText<128>()
    var lookupNanoseconds: UInt64 = 0
  }

  struct Table: ~Copyable {
    static let capacity = 64
    var entries = InlineArray<64, Entry>(repeating: Entry())
    var next = 0
  }

  static let table = Mutex(Table())

  /// Remembers that `host` resolved to `address` in `lookupNanoseconds`.
  static func remember(_ address: PeerAddress, host: FixedText<128>, lookupNanoseconds: UInt64) {
    table.withLockIfAvailable { table in
      table.entries[table.next % Table.capacity] = Entry(
        address: address, host: host, lookupNanoseconds: lookupNanoseconds)
      table.next &+= 1
    }
  }

  /// Remembers the answers of a lookup (made by the getaddrinfo hook, or by the injected library
  /// before the monitor was loaded).
  static func remember(_ lookup: cnm_dns_record) {
    let host = lookup.withHost { FixedText<128>($0) }
    lookup.forEachAddress { address in remember(address, host: host, lookupNanoseconds: lookup.duration_ns) }
  }

  /// The most recent resolution that returned `address`; nil when none, or when the table is busy.
  /// An IPv4-mapped IPv6 address (a dual-stack socket's) is its IPv4 one, on either side.
  static func lookUp(_ address: PeerAddress) -> Entry? {
    let wanted = address.unmapped
    return table.withLockIfAvailable { table -> Entry? in
      var index = table.next
      for _ in 0..<Table.capacity {
        index &-= 1
        let entry = table.entries[(index % Table.capacity + Table.capacity) % Table.capacity]
        if entry.address.unmapped.sameHost(as: wanted) { return entry }
      }
      return nil
    } ?? nil
  }
}
