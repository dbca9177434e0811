/// OpenSSL's protocol name (`TLSv1.3`, `TLSv1`, `SSLv3`) as the conventions'
/// `tls.protocol.name` (`tls`, `ssl`) and `tls.protocol.version` (`1.3`, `1.0`, `3`).
struct TLSVersionName: Equatable {
  var name: String
  var version: String

  init(_ openSSLName: String) {
    let lower = openSSLName.lowercased()
    for prefix in ["tls", "ssl"] where lower.hasPrefix(prefix) {
      name = prefix
      var rest = lower.dropFirst(prefix.count)
      if rest.hasPrefix("v") { rest = rest.dropFirst() }
      version = rest == "1" ? "1.0" : String(rest)
      return
    }
    name = lower
    version = ""
  }
}
