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
    /// The key: the scheme, the method's, `Host`'s and path part's lengths, then their bytes
    /// (``Request/matches(_:)``); empty for a slot not in use.
    var key: [UInt8] = []
    var host = 0
    var endpoint = 0
  }

  /// The bytes of a record's request that decide its rows, in its slot.
  private struct Request {
    let isTLS: Bool
    let method: UnsafeRawBufferPointer
    let host: UnsafeRawBufferPointer
    let path: UnsafeRawBufferPointer

    static let headerBytes = 6

    init(_ http: HTTPRecordView, method: UnsafeRawBufferPointer, target: UnsafeRawBufferPointer, host: UnsafeRawBufferPointer) {
      isTLS = http.isTLS
      self.method = method
      self.host = host
      path = UnsafeRawBufferPointer(rebasing: target[..<EndpointKey.pathPartEnd(of: target)])
    }

    var header: (UInt8, UInt8, UInt8, UInt8, UInt8, UInt8) {
      (
        isTLS ? 1 : 0, UInt8(truncatingIfNeeded: method.count), UInt8(truncatingIfNeeded: host.count),
        UInt8(truncatingIfNeeded: host.count >> 8), UInt8(truncatingIfNeeded: path.count),
        UInt8(truncatingIfNeeded: path.count >> 8)
      )
    }

    /// The first slot to probe: a multiply-and-shift hash of the parts, eight bytes at a time.
    var firstSlot: Int {
      var hash = 0x9E37_79B9_7F4A_7C15 ^ UInt64(isTLS ? 1 : 0) ^ UInt64(method.count) << 8 ^ UInt64(host.count) << 16
        ^ UInt64(path.count) << 32
      Self.mix(method, into: &hash)
      Self.mix(host, into: &hash)
      Self.mix(path, into: &hash)
      hash ^= hash >> 29
      return Int(truncatingIfNeeded: hash & UInt64(capacity &- 1))
    }

    private static func mix(_ part: UnsafeRawBufferPointer, into hash: inout UInt64) {
      var offset = 0
      while offset &+ 8 <= part.count {
        hash = (hash ^ part.loadUnaligned(fromByteOffset: offset, as: UInt64.self)) &* 0xFF51_AFD7_ED55_8CCD
        hash ^= hash >> 32
        offset &+= 8
      }
      while offset < part.count {
        hash = (hash ^ UInt64(part[offset])) &* 0xC4CE_B9FE_1A85_EC53
        offset &+= 1
      }
    }

    func matches(_ key: [UInt8]) -> Bool {
      guard key.count == Self.headerBytes &+ method.count &+ host.count &+ path.count else { return false }
      return key.withUnsafeBytes { key in
        let header = header
        guard withUnsafeBytes(of: header, { memcmp(key.baseAddress!, $0.baseAddress!, Self.headerBytes) }) == 0 else {
          return false
        }
        let bytes = key.baseAddress! + Self.headerBytes
        return Self.equal(bytes, method) && Self.equal(bytes + method.count, host)
          && Self.equal(bytes + method.count + host.count, path)
      }
    }

    private static func equal(_ stored: UnsafeRawPointer, _ part: UnsafeRawBufferPointer) -> Bool {
      part.isEmpty || memcmp(stored, part.baseAddress!, part.count) == 0
    }

    func write(to key: inout [UInt8]) {
      key.removeAll(keepingCapacity: true)
      withUnsafeBytes(of: header) { key.append(contentsOf: $0) }
      key.append(contentsOf: method)
      key.append(contentsOf: host)
      key.append(contentsOf: path)
    }
  }

  private var routes: [Route] = []

  /// The rows of `http`'s route, when a request to it was counted and remembered.
  func rows(of http: HTTPRecordView) -> (host: Int, endpoint: Int)? {
    guard !routes.isEmpty, http.grpcStatus == nil else { return nil }
    return http.withRequestText { method, target, host in
      let request = Request(http, method: method, target: target, host: host)
      var slot = request.firstSlot
      for _ in 0..<Self.probes {
        let route = routes[slot]
        if route.key.isEmpty { return nil }
        if request.matches(route.key) { return (route.host, route.endpoint) }
        slot = (slot &+ 1) & (Self.capacity &- 1)
      }
      return nil
    }
  }

  /// Remembers that `http`, just counted, went to rows `host` and `endpoint`.
  mutating func remember(_ http: HTTPRecordView, host: Int, endpoint: Int) {
    guard http.grpcStatus == nil else { return }
    if routes.isEmpty { routes = Array(repeating: Route(), count: Self.capacity) }
    http.withRequestText { method, target, hostBytes in
      let request = Request(http, method: method, target: target, host: hostBytes)
      let first = request.firstSlot
      var chosen = first
      var slot = first
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
}
