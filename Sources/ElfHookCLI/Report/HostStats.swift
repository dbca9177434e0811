import NetMonitor

/// What one host (`server.address` and port) saw: its HTTP requests and the connections the
/// process opened to it.
struct HostStats {
  private(set) var http = RequestStats()
  private(set) var connections = 0
  private(set) var failedConnections = 0
  /// Socket bytes of connections that carried no HTTP the monitor could read (a database, a cache,
  /// TLS through an unhooked library). Connections that did carry HTTP are already counted, as
  /// plaintext, by their requests; adding their socket bytes too would count them twice.
  private var opaqueBytesSent: UInt64 = 0
  private var opaqueBytesReceived: UInt64 = 0

  var errors: Int { http.errors + failedConnections }
  var bytesSent: UInt64 { http.bytesSent + opaqueBytesSent }
  var bytesReceived: UInt64 { http.bytesReceived + opaqueBytesReceived }

  mutating func add(_ request: HTTPRecord) {
    http.add(request)
  }

  mutating func add(_ request: HTTPRecordView, failed: Bool) {
    http.add(request, failed: failed)
  }

  mutating func add(_ repeats: PendingRepeats) {
    http.add(repeats)
  }

  mutating func add(_ connection: ConnectionRecord) {
    connections += 1
    if connection.error != nil { failedConnections += 1 }
    if (connection.httpExchanges ?? 0) == 0 {
      opaqueBytesSent += connection.bytesSent
      opaqueBytesReceived += connection.bytesReceived
    }
  }
}
