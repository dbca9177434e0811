/// A `Host` header split into its name and port (`example.org:8080`, `[::1]:80`, `example.org`).
struct HostAndPort: Equatable {
  var host: String
  var port: UInt16?

  /// Splits `header`; a bracketed IPv6 literal loses its brackets, as `server.address` wants.
  init(_ header: String) {
    if header.hasPrefix("["), let close = header.firstIndex(of: "]") {
      host = String(header[header.index(after: header.startIndex)..<close])
      let rest = header[header.index(after: close)...]
      port = rest.hasPrefix(":") ? UInt16(rest.dropFirst()) : nil
    } else if let colon = header.lastIndex(of: ":"), header.firstIndex(of: ":") == colon {
      host = String(header[..<colon])
      port = UInt16(header[header.index(after: colon)...])
    } else {
      host = header
      port = nil
    }
  }
}
