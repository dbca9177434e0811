import CNetMonitor

/// Assembly: the recorder thread turns the POD records the hooks queued into ``Transaction``s.
extension RawRecord {
  /// The record in a queue or ring slot, of whichever kind; nil for bytes that are no record.
  static func transaction(at slot: UnsafeRawPointer, process: String) -> Transaction? {
    switch slot.load(as: UInt8.self) {
    case Kind.dns: .dns(slot.load(as: cnm_dns_record.self).dnsRecord(process: process))
    case Kind.connection, Kind.http: slot.load(as: RawRecord.self).transaction(process: process)
    default: nil
    }
  }

  private func transaction(process: String) -> Transaction? {
    switch kind {
    case Kind.connection: .connection(connectionRecord(process: process))
    case Kind.http: .http(httpRecord(process: process))
    default: nil
    }
  }

  private var durationMilliseconds: Double { Double(durationNanoseconds) / 1_000_000 }

  /// The connection's setup phases, in milliseconds; `nil` for a phase it did not go through.
  private var setupMilliseconds: (dns: Double?, connect: Double?, tls: Double?) {
    let connect: Double? =
      core.role == ConnectionCore.Role.client && core.connectEnd != 0
      ? MonotonicClock.milliseconds(from: core.connectStart, to: core.connectEnd) : nil
    let tls: Double? =
      core.isTLS != 0 && core.tlsStart != 0 && core.tlsEnd != 0
      ? MonotonicClock.milliseconds(from: core.tlsStart, to: core.tlsEnd) : nil
    return (core.hasDNS != 0 ? Double(core.dnsNanoseconds) / 1_000_000 : nil, connect, tls)
  }

  private var role: ConnectionRole? {
    switch core.role {
    case ConnectionCore.Role.client: .client
    case ConnectionCore.Role.server: .server
    default: nil
    }
  }

  private var tlsVersion: String? { core.isTLS != 0 && !core.tlsVersion.isEmpty ? core.tlsVersion.string : nil }

  private func connectionRecord(process: String) -> ConnectionRecord {
    let isTLS = core.isTLS != 0
    let setup = setupMilliseconds
    return ConnectionRecord(
      pid: pid, process: process, startUnixNs: startUnixNanoseconds, durationMs: durationMilliseconds,
      id: core.id, role: role ?? .server,
      transport: core.transport == ConnectionCore.Transport.udp ? .udp : .tcp,
      host: core.host.isEmpty ? nil : core.host.string,
      peerAddress: core.peer.text, peerPort: core.peer.isInternet ? core.peer.port : nil,
      dnsMs: setup.dns, connectMs: setup.connect, tlsMs: setup.tls, tlsVersion: tlsVersion,
      bytesSent: core.bytesSent, bytesReceived: core.bytesReceived,
      tlsBytesSent: isTLS ? core.tlsBytesSent : nil, tlsBytesReceived: isTLS ? core.tlsBytesReceived : nil,
      httpExchanges: Int(core.httpExchanges), error: recordedError)
  }

  private func httpRecord(process: String) -> HTTPRecord {
    let setup = httpReused ? (dns: nil, connect: nil, tls: nil) : setupMilliseconds
    return HTTPRecord(
      pid: pid, process: process, startUnixNs: startUnixNanoseconds, durationMs: durationMilliseconds,
      connectionId: core.id, scheme: core.isTLS != 0 ? .https : .http, method: httpRequest.methodString,
      host: httpRequest.hostString, target: httpRequest.targetString,
      status: httpStatus == 0 ? nil : Int(httpStatus),
      ttfbMs: httpFirstByteNanoseconds == 0 ? nil : Double(httpFirstByteNanoseconds - 1) / 1_000_000,
      requestBytes: httpRequestBytes, responseBytes: httpResponseBytes, reusedConnection: httpReused,
      role: role, peerAddress: core.peer.text, peerPort: core.peer.isInternet ? core.peer.port : nil,
      tlsVersion: tlsVersion, dnsMs: setup.dns, connectMs: setup.connect, tlsMs: setup.tls)
  }

  private var recordedError: RecordedError? {
    guard let call = HookedCall(rawValue: core.errorCall), call != .none else { return nil }
    if call == .sslHandshake { return .ssl(core.errorCode, call: call.name) }
    return .errno(core.errorCode, call: call.name)
  }
}
