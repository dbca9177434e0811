import Glibc
import NetMonitor

/// The host and endpoint rows a summary counted requests in, found again from the bytes of a
/// record still in its ring slot: its scheme, method, `Host` value and the target's bytes before
/// its query (``EndpointKey/pathPartEnd(of:)``). Those bytes decide both rows — the query never
/// does — so a request to a known endpoint is counted from its numbers, never decoded, redacted
/// or hashed as strings, however its query, its size or its status differ from the last request.
/// Real traffic repeats endpoints far more than whole requests (`RepeatedRequest`): every
/// request of `bench-traffic`'s varied workload has a query of its own, over 200 paths.
///
/// An open-addressed table of up to ``capacity`` routes (linear probing over at most ``probes``
/// slots), each compared byte for byte on a hit. With every slot of a probe taken, a new route
/// replaces the first, which is then decoded once more when it comes back. Not for gRPC calls,
/// whose endpoint is their service and method (``GRPCCall``).
struct RouteRows {
  static let capacity = 4096
  static let probes = 8

  private struct Route {
    /// The key: the scheme and the lengths in a word, then the method's and path part's bytes and
    /// `Host`'s (``Request/matches(_:)``); empty for a slot not in use.
    var key: [UInt8] = []
    var host = 0
    var endpoint = 0
  }

  /// The bytes of a record's request that decide its rows, in its slot: the method and the
  /// target's path part, which the slot packs one after the other (`lead`), and the `Host` value.
  private struct Request {
    let lead: UnsafeRawBufferPointer
    let host: UnsafeRawBufferPointer
    /// The scheme and the three lengths, one word: a key's first eight bytes.
    let header: UInt64

    /// The request of `http`, from its text (``HTTPRecordView/withRequestText(_:)``: valid as long).
    init(
      _ http: HTTPRecordView, method: UnsafeRawBufferPointer, target: UnsafeRawBufferPointer,
      host: UnsafeRawBufferPointer
    ) {
      let pathLength = EndpointKey.pathPartEnd(of: target)
      lead = UnsafeRawBufferPointer(start: method.baseAddress, count: method.count &+ pathLength)
      self.host = host
      header = (http.isTLS ? 1 : 0) | UInt64(method.count) << 8 | UInt64(host.count) << 16 | UInt64(lead.count) << 32
    }

    /// The first slot to probe: a multiply-and-shift hash of the header and both parts.
    var firstSlot: Int {
      var hash = (0x9E37_79B9_7F4A_7C15 ^ header) &* 0xFF51_AFD7_ED55_8CCD
      Self.mix(lead, into: &hash)
      Self.mix(host, into: &hash)
      hash ^= hash >> 29
      return Int(truncatingIfNeeded: hash & UInt64(capacity &- 1))
    }

    /// Mixes `part` into `hash` eight bytes at a time, its last bytes as one word.
    private static func mix(_ part: UnsafeRawBufferPointer, into hash: inout UInt64) {
      var offset = 0
      while offset &+ 8 <= part.count {
        hash = (hash ^ part.loadUnaligned(fromByteOffset: offset, as: UInt64.self)) &* 0xFF51_AFD7_ED55_8CCD
        hash ^= hash >> 32
        offset &+= 8
      }
      guard offset < part.count else { return }
      var last: UInt64 = 0
      withUnsafeMutableBytes(of: &last) { $0.copyMemory(from: UnsafeRawBufferPointer(rebasing: part[offset...])) }
      hash = (hash ^ last) &* 0xC4CE_B9FE_1A85_EC53
      hash ^= hash >> 32
    }

    func matches(_ key: [UInt8]) -> Bool {
      guard key.count == 8 &+ lead.count &+ host.count else { return false }
      return key.withUnsafeBytes { key in
        guard key.loadUnaligned(as: UInt64.self) == header else { return false }
        return Self.equal(key.baseAddress! + 8, lead) && Self.equal(key.baseAddress! + 8 + lead.count, host)
      }
    }

    private static func equal(_ stored: UnsafeRawPointer, _ part: UnsafeRawBufferPointer) -> Bool {
      part.isEmpty || memcmp(stored, part.baseAddress!, part.count) == 0
    }

    func write(to key: inout [UInt8]) {
      key.removeAll(keepingCapacity: true)
      withUnsafeBytes(of: header) { key.append(contentsOf: $0) }
      key.append(contentsOf: lead)
      key.append(contentsOf: host)
    }
  }

  private var routes: [Route] = []

  /// The rows of `http`'s route, when a request to it was counted and remembered.
  func rows(of http: HTTPRecordView) -> (host: Int, endpoint: Int)? {
    guard !routes.isEmpty, http.grpcStatus == nil else { return nil }
    var found: (host: Int, endpoint: Int)?
    http.withRequestText { method, target, host in
      found = rows(of: Request(http, method: method, target: target, host: host))
    }
    return found
  }

  private func rows(of request: Request) -> (host: Int, endpoint: Int)? {
    routes.withUnsafeBufferPointer { routes in
      var slot = request.firstSlot
      for _ in 0..<Self.probes {
        if routes[slot].key.isEmpty { return nil }
        if request.matches(routes[slot].key) { return (routes[slot].host, routes[slot].endpoint) }
        slot = (slot &+ 1) & (Self.capacity &- 1)
      }
      return nil
    }
  }

  /// Remembers that `http`, just counted, went to rows `host` and `endpoint`.
  mutating func remember(_ http: HTTPRecordView, host: Int, endpoint: Int) {
    guard http.grpcStatus == nil else { return }
    if routes.isEmpty { routes = Array(repeating: Route(), count: Self.capacity) }
    http.withRequestText { method, target, hostText in
      remember(Request(http, method: method, target: target, host: hostText), host: host, endpoint: endpoint)
    }
  }

  private mutating func remember(_ request: Request, host: Int, endpoint: Int) {
    var chosen = request.firstSlot
    var slot = chosen
    for _ in 0..<Self.probes {
      if routes[slot].key.isEmpty || request.matches(routes[slot].key) {
        chosen = slot
        break
      }
      slot = (slot &+ 1) & (Self.capacity &- 1)
    }
    request.write(to: &routes[chosen].key)
    routes[chosen].host = host
    routes[chosen].endpoint = endpoint
  }
}
