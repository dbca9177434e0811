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
  static func path(of target: String) -> String {
    var rest = target[...]
    if let scheme = rest.range(of: "://") {
      let authority = rest[scheme.upperBound...]
      rest = authority.firstIndex(of: "/").map { authority[$0...] } ?? "/"
    }
    return String(rest.prefix { $0 != "?" && $0 != "#" })
  }
}
