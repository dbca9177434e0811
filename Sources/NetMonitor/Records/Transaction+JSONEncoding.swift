extension Transaction {
  /// The record as one line of JSON, without the trailing newline (sinks add it).
  ///
  /// Keys come in the fixed order of `ARCHITECTURE.md` ("The record"): the common fields `kind`,
  /// `pid`, `process`, `start_unix_ns`, `duration_ms`, then the kind's own fields. `nil`
  /// properties and non-finite durations are `null`; integers are exact; durations are
  /// milliseconds with at most three decimals. The line never contains a raw newline.
  public func jsonLine() -> String {
    let bytes = jsonBytes(appendingNewline: false)
    return String(decoding: bytes, as: UTF8.self)
  }

  /// The record's UTF-8 bytes, optionally with the terminating `\n`: what `JSONLinesSink` writes.
  func jsonBytes(appendingNewline: Bool) -> [UInt8] {
    var bytes: [UInt8] = []
    bytes.reserveCapacity(384)
    appendJSON(to: &bytes, newline: appendingNewline)
    return bytes
  }

  /// Appends the record's line (``jsonLine()``) and its `\n` to `buffer`: what a consumer that
  /// writes many records at once uses, with one buffer for all of them.
  public func appendJSONLine(to buffer: inout [UInt8]) {
    appendJSON(to: &buffer, newline: true)
  }

  private func appendJSON(to buffer: inout [UInt8], newline: Bool) {
    JSONWriter.append(to: &buffer) { writeJSON(to: &$0, newline: newline) }
  }

  private func writeJSON(to writer: inout JSONWriter, newline: Bool) {
    writer.beginObject()
    switch self {
    case .dns(let record):
      writer.commonFields(.dns, record.pid, record.process, record.startUnixNs, record.durationMs)
      writer.key("host")
      writer.string(record.host)
      writer.key("addresses")
      writer.strings(record.addresses)
      writer.key("error")
      writer.error(record.error)
    case .connection(let record):
      writer.commonFields(
        .connection, record.pid, record.process, record.startUnixNs, record.durationMs)
      writer.key("id")
      writer.integer(record.id)
      writer.key("role")
      writer.string(record.role.rawValue)
      writer.key("transport")
      writer.string(record.transport.rawValue)
      writer.key("host")
      writer.string(record.host)
      writer.connectionFields(
        record.peerAddress, record.peerPort, record.dnsMs, record.connectMs, record.tlsMs, record.tlsVersion)
      writer.key("tls_alpn")
      writer.string(record.tlsALPN)
      writer.key("bytes_sent")
      writer.integer(record.bytesSent)
      writer.key("bytes_received")
      writer.integer(record.bytesReceived)
      writer.key("tls_bytes_sent")
      writer.integer(record.tlsBytesSent)
      writer.key("tls_bytes_received")
      writer.integer(record.tlsBytesReceived)
      writer.key("http_exchanges")
      writer.integer(record.httpExchanges.map { Int64($0) })
      writer.key("http_error")
      writer.string(record.httpError)
      writer.key("error")
      writer.error(record.error)
    case .http(let record):
      writer.commonFields(.http, record.pid, record.process, record.startUnixNs, record.durationMs)
      writer.key("connection_id")
      writer.integer(record.connectionId)
      writer.key("scheme")
      writer.string(record.scheme.rawValue)
      writer.key("method")
      writer.string(record.method)
      writer.key("host")
      writer.string(record.host)
      writer.key("target")
      writer.string(record.target)
      writer.key("status")
      writer.integer(record.status.map { Int64($0) })
      writer.key("ttfb_ms")
      writer.milliseconds(record.ttfbMs)
      writer.key("request_bytes")
      writer.integer(record.requestBytes)
      writer.key("response_bytes")
      writer.integer(record.responseBytes)
      writer.key("response_complete")
      writer.bool(record.responseComplete)
      writer.key("reused_connection")
      writer.bool(record.reusedConnection)
      writer.key("protocol")
      writer.string(record.httpProtocol?.rawValue)
      writer.key("stream_id")
      writer.integer(record.streamId.map { UInt64($0) })
      writer.key("grpc_status")
      writer.integer(record.grpcStatus.map { Int64($0) })
      writer.key("grpc_message")
      writer.string(record.grpcMessage)
      writer.key("role")
      writer.string(record.role?.rawValue)
      writer.connectionFields(
        record.peerAddress, record.peerPort, record.dnsMs, record.connectMs, record.tlsMs, record.tlsVersion)
    }
    writer.endObject()
    if newline { writer.newline() }
  }
}

extension JSONWriter {
  /// The peer and setup phases, as a `connection` record and an `http` record (its connection's,
  /// on the first exchange) both write them.
  fileprivate mutating func connectionFields(
    _ peerAddress: String?, _ peerPort: UInt16?, _ dnsMs: Double?, _ connectMs: Double?, _ tlsMs: Double?,
    _ tlsVersion: String?
  ) {
    key("peer_address")
    string(peerAddress)
    key("peer_port")
    integer(peerPort.map { UInt64($0) })
    key("dns_ms")
    milliseconds(dnsMs)
    key("connect_ms")
    milliseconds(connectMs)
    key("tls_ms")
    milliseconds(tlsMs)
    key("tls_version")
    string(tlsVersion)
  }

  fileprivate mutating func commonFields(
    _ kind: TransactionKind, _ pid: Int32, _ process: String, _ startUnixNs: UInt64,
    _ durationMs: Double
  ) {
    key("kind")
    string(kind.rawValue)
    key("pid")
    integer(Int64(pid))
    key("process")
    string(process)
    key("start_unix_ns")
    integer(startUnixNs)
    key("duration_ms")
    milliseconds(durationMs)
  }
}
