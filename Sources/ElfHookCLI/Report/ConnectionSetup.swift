import NetMonitor

/// Which connection an HTTP record belongs to: `HTTPRecord` (`pid`, `connection_id`) equals
/// `ConnectionRecord` (`pid`, `id`).
struct ConnectionKey: Hashable {
  var pid: Int32
  var id: UInt64

  init(_ http: HTTPRecord) {
    self.init(pid: http.pid, id: http.connectionId)
  }

  init(_ connection: ConnectionRecord) {
    self.init(pid: connection.pid, id: connection.id)
  }

  init(pid: Int32, id: UInt64) {
    self.pid = pid
    self.id = id
  }
}

/// The setup phases of a connection, in milliseconds: what its first request waited for before
/// its first byte. A phase the record has no value for (no DNS for a numeric address, no TLS)
/// took no time.
struct ConnectionSetup {
  var dnsMs: Double
  var connectMs: Double
  var tlsMs: Double

  init(_ connection: ConnectionRecord) {
    dnsMs = connection.dnsMs ?? 0
    connectMs = connection.connectMs ?? 0
    tlsMs = connection.tlsMs ?? 0
  }
}
