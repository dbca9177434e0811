import NetMonitor

/// How long each phase of one HTTP request took, in milliseconds (0 for a phase that did not
/// happen: no DNS for a numeric address, no setup at all on a reused connection).
struct RequestPhases {
  var dns = 0.0
  var connect = 0.0
  var tls = 0.0
  var wait = 0.0
  var transfer = 0.0

  /// The phases of `http`; `setup` is its connection's, when this request opened the connection
  /// and the connection's record is known.
  init(_ http: HTTPRecord, setup: ConnectionSetup?) {
    if let setup {
      dns = setup.dnsMs
      connect = setup.connectMs
      tls = setup.tlsMs
    }
    let duration = http.durationMs.isFinite ? http.durationMs : 0
    // Without a response the whole exchange was spent waiting for one.
    wait = min(http.ttfbMs ?? duration, duration)
    transfer = duration - wait
  }

  subscript(phase: RequestPhase) -> Double {
    switch phase {
    case .dns: dns
    case .connect: connect
    case .tls: tls
    case .wait: wait
    case .transfer: transfer
    }
  }

  /// The setup phases: what happened before the request's first byte.
  var setup: Double { dns + connect + tls }
  var total: Double { setup + wait + transfer }
}
