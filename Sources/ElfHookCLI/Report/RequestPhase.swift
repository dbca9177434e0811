/// The five phases of an HTTP request's timing, in the order they happen, as a browser's network
/// panel shows them. The first three belong to the connection and count only for the request
/// that opened it.
enum RequestPhase: CaseIterable {
  /// Resolving the host name (`getaddrinfo`).
  case dns
  /// From `connect` to the connection being established.
  case connect
  /// The TLS handshake.
  case tls
  /// From the request's first byte to the response's first byte (time to first byte).
  case wait
  /// Receiving the rest of the response.
  case transfer

  var name: String {
    switch self {
    case .dns: "DNS"
    case .connect: "connect"
    case .tls: "TLS"
    case .wait: "wait"
    case .transfer: "transfer"
    }
  }

  /// The character that draws this phase in a terminal bar: distinct per phase, so the bar reads
  /// without color too.
  var symbol: Character {
    switch self {
    case .dns: "d"
    case .connect: "c"
    case .tls: "t"
    case .wait: "w"
    case .transfer: "r"
    }
  }

  /// The HTML class of this phase's segment (`class="phase dns"`).
  var cssClass: String {
    switch self {
    case .dns: "dns"
    case .connect: "connect"
    case .tls: "tls"
    case .wait: "wait"
    case .transfer: "transfer"
    }
  }
}
