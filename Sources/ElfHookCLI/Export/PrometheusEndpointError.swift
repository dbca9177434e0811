/// Why a `PrometheusEndpoint` could not start: each case prints as one line naming the address.
enum PrometheusEndpointError: Error, Equatable, CustomStringConvertible {
  /// ADDR is not `HOST:PORT`, `[IPV6]:PORT`, `:PORT` or `PORT`.
  case badAddress(String)
  /// The socket could not be bound (the port is in use, the host is not an address of this
  /// machine…): `reason` is the system's text.
  case cannotListen(address: String, reason: String)

  var description: String {
    switch self {
    case .badAddress(let text):
      "not a listening address: '\(text)' (expected HOST:PORT, [IPV6]:PORT or :PORT, e.g. 127.0.0.1:9464)"
    case .cannotListen(let address, let reason):
      "cannot serve Prometheus metrics on \(address): \(reason)"
    }
  }
}
