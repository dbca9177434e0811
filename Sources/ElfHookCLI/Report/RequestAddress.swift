import NetMonitor

/// Where a request went, as a reader recognizes it: `example.com:8080` and `/path?q`, whatever
/// form its target takes. An origin-form target (`/path`) follows its Host; an absolute-form one
/// (`http://example.com/path`, what a client sends a proxy) names its host itself; an
/// authority-form one (`example.com:443`, CONNECT's) is the host; `*` (OPTIONS) is the server's.
struct RequestAddress {
  var host: String
  /// The path and query, `/` first; ` *` for the server itself; empty for CONNECT.
  var target: String

  init(_ http: HTTPRecord) {
    let target = http.target
    let header = http.host ?? HostKey(http).description
    if target.hasPrefix("/") {
      (host, self.target) = (header, target)
    } else if let scheme = target.range(of: "://") {
      let authority = target[scheme.upperBound...]
      let slash = authority.firstIndex(of: "/") ?? authority.endIndex
      (host, self.target) = (String(authority[..<slash]), String(authority[slash...]))
    } else if target == "*" {
      (host, self.target) = (header, " *")
    } else {
      (host, self.target) = (target, "")
    }
  }

  /// `example.com:8080/path?q`.
  var description: String { host + target }
}
