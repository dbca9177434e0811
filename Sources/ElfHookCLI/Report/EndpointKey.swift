import NetMonitor

/// An endpoint: a method, a host and a path, without the query string (which would make every
/// request its own endpoint).
struct EndpointKey: Hashable, CustomStringConvertible {
  var method: String
  var host: HostKey
  var path: String

  init(_ http: HTTPRecord) {
    self.init(method: http.method, host: HostKey(http), path: Self.path(of: http.target))
  }

  init(method: String, host: HostKey, path: String) {
    self.method = method
    self.host = host
    self.path = path
  }

  /// `GET example.com:443/path`.
  var description: String { "\(method) \(host)\(path)" }

  /// The path of a request target: the origin form (`/a/b?q`) up to its query, or the path of an
  /// absolute form (`http://host/a/b?q`, what a client sends a proxy).
  ///
  /// Scans UTF-8 bytes: it runs once per request record, for millions of them in a long run.
  static func path(of target: String) -> String {
    let bytes = Array(target.utf8)
    var start = 0
    if let scheme = firstIndex(of: Array("://".utf8), in: bytes) {
      let authority = scheme + 3
      guard let slash = bytes[authority...].firstIndex(of: UInt8(ascii: "/")) else { return "/" }
      start = slash
    }
    let end = bytes[start...].firstIndex { $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#") } ?? bytes.count
    return String(decoding: bytes[start..<end], as: UTF8.self)
  }

  private static func firstIndex(of needle: [UInt8], in bytes: [UInt8]) -> Int? {
    guard bytes.count >= needle.count else { return nil }
    return (0...(bytes.count - needle.count)).first { bytes[$0..<$0 + needle.count].elementsEqual(needle) }
  }
}
