/// Where `elfhook export --prometheus ADDR` listens: a host and a port.
///
/// Accepted forms: `127.0.0.1:9464`, `[::1]:9464`, `localhost:9464`, `0.0.0.0:9464` (every
/// interface, only when asked for), `:9464` and a bare `9464` (both mean `127.0.0.1:9464`: metrics
/// about a machine's traffic are not published beyond it unless the host says so). Port 0 asks the
/// system for a free port (`PrometheusEndpoint.port` tells which).
struct PrometheusAddress: Equatable, CustomStringConvertible {
  /// The host to bind: an IPv4 or IPv6 literal (without brackets) or a name.
  var host: String
  /// The TCP port.
  var port: Int

  /// The host used when ADDR names none.
  static let defaultHost = "127.0.0.1"

  /// An address from its parts.
  init(host: String, port: Int) {
    self.host = host
    self.port = port
  }

  /// Parses ADDR; `nil` when it is not one of the accepted forms.
  init?(_ text: String) {
    var host: Substring
    let portText: Substring
    if text.hasPrefix("[") {
      guard let close = text.firstIndex(of: "]") else { return nil }
      host = text[text.index(after: text.startIndex)..<close]
      let rest = text[text.index(after: close)...]
      guard rest.hasPrefix(":"), !host.isEmpty else { return nil }
      portText = rest.dropFirst()
    } else if let colon = text.lastIndex(of: ":") {
      host = text[..<colon]
      guard !host.contains(":") else { return nil }  // a bare IPv6 address needs brackets
      portText = text[text.index(after: colon)...]
    } else {
      host = ""
      portText = Substring(text)
    }
    guard !portText.isEmpty, portText.allSatisfy({ $0.isASCII && $0.isNumber }),
      let port = Int(portText), port <= 65_535
    else { return nil }
    if host.isEmpty { host = Substring(Self.defaultHost) }
    self.host = String(host)
    self.port = port
  }

  /// `host:port`, with brackets around an IPv6 host: the form a URL uses.
  var description: String {
    host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
  }
}
