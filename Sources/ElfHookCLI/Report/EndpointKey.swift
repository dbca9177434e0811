import Glibc
import NetMonitor

/// An endpoint: a method, a host and a path, without the query string (which would make every
/// request its own endpoint).
struct EndpointKey: Hashable, CustomStringConvertible {
  var method: String
  var host: HostKey
  var path: String

  /// A gRPC call's endpoint is its service and method (`gRPC host:port test.Echo/Unary`).
  init(_ http: HTTPRecord) {
    if let call = GRPCCall(http) {
      self.init(method: "gRPC", host: HostKey(http), path: call.service + "/" + call.method)
    } else {
      self.init(method: http.method, host: HostKey(http), path: Self.path(of: http.target))
    }
  }

  init(method: String, host: HostKey, path: String) {
    self.method = method
    self.host = host
    self.path = path
  }

  /// `GET example.com:443/path`; `CONNECT example.com:443`; `OPTIONS example.com *`;
  /// `gRPC example.com:443 pkg.Service/Method`.
  var description: String { path.isEmpty || path.hasPrefix("/") ? "\(method) \(host)\(path)" : "\(method) \(host) \(path)" }

  /// The path of a request target: the origin form (`/a/b?q`) up to its query, or the path of an
  /// absolute form (`http://host/a/b?q`, what a client sends a proxy).
  ///
  /// Only the bytes before the first `?` or `#` decide it (``pathPartEnd(of:)``: a `://` in a
  /// query is no scheme), so requests whose targets share those bytes share an endpoint, which is
  /// what lets a summary count them without decoding (`RouteRows`). Scans UTF-8 bytes in place: it
  /// runs once per request record, for millions of them in a long run. A target that is all path
  /// is returned as it is.
  static func path(of target: String) -> String {
    if let path = target.utf8.withContiguousStorageIfAvailable({ path(of: target, in: $0) }) { return path }
    return Array(target.utf8).withUnsafeBufferPointer { path(of: target, in: $0) }
  }

  private static func path(of target: String, in bytes: UnsafeBufferPointer<UInt8>) -> String {
    let end = pathPartEnd(of: UnsafeRawBufferPointer(bytes))
    var start = 0
    if bytes.first != UInt8(ascii: "/") && bytes.first != UInt8(ascii: "*") {
      // Authority form (CONNECT's `host:port`): the endpoint is the host alone.
      guard let scheme = schemeSeparator(in: UnsafeBufferPointer(rebasing: bytes[..<end])) else { return "" }
      let authority = scheme + 3
      guard let slash = bytes[authority..<end].firstIndex(of: UInt8(ascii: "/")) else { return "/" }
      start = slash
    }
    if start == 0 && end == bytes.count { return target }
    return String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<end]), as: UTF8.self)
  }

  /// Where a target's query or fragment starts (its first `?` or `#`); its length when it has
  /// neither.
  static func pathPartEnd(of target: UnsafeRawBufferPointer) -> Int {
    guard let base = target.baseAddress else { return 0 }
    let query = memchr(base, Int32(UInt8(ascii: "?")), target.count).map { UnsafeRawPointer($0) - base } ?? target.count
    return memchr(base, Int32(UInt8(ascii: "#")), query).map { UnsafeRawPointer($0) - base } ?? query
  }

  /// Where the first `://` starts.
  private static func schemeSeparator(in bytes: UnsafeBufferPointer<UInt8>) -> Int? {
    guard bytes.count >= 3 else { return nil }
    for index in 0...(bytes.count - 3)
    where bytes[index] == UInt8(ascii: ":") && bytes[index + 1] == UInt8(ascii: "/")
      && bytes[index + 2] == UInt8(ascii: "/")
    {
      return index
    }
    return nil
  }
}
