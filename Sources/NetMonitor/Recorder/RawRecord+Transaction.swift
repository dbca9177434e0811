import CHTTP2
import CNetMonitor

/// Assembly: the recorder thread (or a ring's consumer) turns the POD records the hooks queued into
/// ``Transaction``s.
extension RawRecord {
  /// The record in a queue or ring slot, of whichever kind, read in place; nil for bytes that are
  /// no record. Text is taken from `cache` when the previous record had the same bytes.
  static func transaction(at slot: UnsafeRawPointer, process: String, cache: inout RecordTextCache) -> Transaction? {
    switch slot.load(as: UInt8.self) {
    case Kind.dns: .dns(slot.load(as: cnm_dns_record.self).dnsRecord(process: process))
    case Kind.connection: .connection(record(at: slot).connectionRecord(process: process, cache: &cache))
    case Kind.http: .http(record(at: slot).httpRecord(process: process, cache: &cache))
    default: nil
    }
  }

  /// Whether the bytes in a queue or ring slot are a record of a kind this build reads.
  static func isRecord(at slot: UnsafeRawPointer) -> Bool {
    switch slot.load(as: UInt8.self) {
    case Kind.dns, Kind.connection, Kind.http: true
    default: false
    }
  }

  private static func record(at slot: UnsafeRawPointer) -> UnsafePointer<RawRecord> {
    UnsafePointer(slot.bindMemory(to: RawRecord.self, capacity: 1))
  }

  /// Hands the record in a queue or ring slot to `body`, made as its argument: no `Transaction?`
  /// to unwrap, and so no copies of the record on the way (a consumer's cost per record). False
  /// for bytes that are no record.
  static func withTransaction(
    at slot: UnsafeRawPointer, process: String, cache: inout RecordTextCache, _ body: (Transaction) -> Void
  ) -> Bool {
    switch slot.load(as: UInt8.self) {
    case Kind.dns: body(.dns(slot.load(as: cnm_dns_record.self).dnsRecord(process: process)))
    case Kind.connection: body(.connection(record(at: slot).connectionRecord(process: process, cache: &cache)))
    case Kind.http: body(.http(record(at: slot).httpRecord(process: process, cache: &cache)))
    default: return false
    }
    return true
  }
}

/// A connection or http record, read in place (a ring's slot): the 1,344-byte record and its text
/// fields are never copied whole, and text is decoded straight from the slot's bytes up to its
/// length, or taken from `cache` when the previous record had the same bytes.
extension UnsafePointer where Pointee == RawRecord {
  /// ``HTTPRecord/durationMs`` and ``ConnectionRecord/durationMs``; ``HTTPRecordView`` reads it too.
  var durationMilliseconds: Double { Double(pointee.durationNanoseconds) / 1_000_000 }

  private var core: UnsafePointer<ConnectionCore> { pointer(to: \.core)! }

  /// The connection's setup phases, in milliseconds; `nil` for a phase it did not go through.
  private var setupMilliseconds: (dns: Double?, connect: Double?, tls: Double?) {
    let core = core
    let connect: Double? =
      core.pointee.role == ConnectionCore.Role.client && core.pointee.connectEnd != 0
      ? MonotonicClock.milliseconds(from: core.pointee.connectStart, to: core.pointee.connectEnd) : nil
    let tls: Double? =
      core.pointee.isTLS != 0 && core.pointee.tlsStart != 0 && core.pointee.tlsEnd != 0
      ? MonotonicClock.milliseconds(from: core.pointee.tlsStart, to: core.pointee.tlsEnd) : nil
    return (core.pointee.hasDNS != 0 ? Double(core.pointee.dnsNanoseconds) / 1_000_000 : nil, connect, tls)
  }

  private var role: ConnectionRole? {
    switch core.pointee.role {
    case ConnectionCore.Role.client: .client
    case ConnectionCore.Role.server: .server
    default: nil
    }
  }

  /// The version OpenSSL negotiated, or the one a ServerHello named on the wire (TLS that no
  /// hooked library decodes: `TLSOnTheWire`).
  private var tlsVersion: String? {
    core.pointee.tlsVersion.isEmpty ? nil : core.pointee.tlsVersion.string
  }

  private var peerPort: UInt16? { core.pointee.peer.isInternet ? core.pointee.peer.port : nil }

  fileprivate func connectionRecord(process: String, cache: inout RecordTextCache) -> ConnectionRecord {
    let core = core
    let isTLS = core.pointee.isTLS != 0
    let setup = setupMilliseconds
    return ConnectionRecord(
      pid: pointee.pid, process: process, startUnixNs: pointee.startUnixNanoseconds,
      durationMs: durationMilliseconds, id: core.pointee.id, role: role ?? .server,
      transport: core.pointee.transport == ConnectionCore.Transport.udp ? .udp : .tcp,
      host: core.pointee.host.isEmpty ? nil : core.pointee.host.string,
      peerAddress: cache.peerText(core.pointee.peer), peerPort: peerPort,
      dnsMs: setup.dns, connectMs: setup.connect, tlsMs: setup.tls, tlsVersion: tlsVersion,
      tlsALPN: core.pointee.tlsALPN.isEmpty ? nil : core.pointee.tlsALPN.string,
      bytesSent: core.pointee.bytesSent, bytesReceived: core.pointee.bytesReceived,
      tlsBytesSent: isTLS ? core.pointee.tlsBytesSent : nil,
      tlsBytesReceived: isTLS ? core.pointee.tlsBytesReceived : nil,
      httpExchanges: Int(core.pointee.httpExchanges), httpError: httpError, error: recordedError)
  }

  fileprivate func httpRecord(process: String, cache: inout RecordTextCache) -> HTTPRecord {
    let request = pointer(to: \.httpRequest)!
    let setup = pointee.httpReused ? (dns: nil, connect: nil, tls: nil) : setupMilliseconds
    let firstByte = pointee.httpFirstByteNanoseconds
    let isH2 = pointee.httpProtocol == RawRecord.HTTPVersion.h2
    let httpProtocol: HTTPProtocol? =
      switch pointee.httpProtocol {
      case RawRecord.HTTPVersion.http10: .http10
      case RawRecord.HTTPVersion.http11: .http11
      case RawRecord.HTTPVersion.h2: .h2
      default: nil
      }
    let grpcStatus: Int? = isH2 && pointee.grpcStatus >= 0 ? Int(pointee.grpcStatus) : nil
    return HTTPRecord(
      pid: pointee.pid, process: process, startUnixNs: pointee.startUnixNanoseconds,
      durationMs: durationMilliseconds, connectionId: core.pointee.id,
      scheme: core.pointee.isTLS != 0 ? .https : .http, method: cache.method(request.methodBytes),
      host: request.pointee.hostLength == 0 ? nil : cache.host(request.hostBytes),
      redactedTarget: withRequestText { _, target, _ in cache.redactedTarget(target) },
      status: pointee.httpStatus == 0 ? nil : Int(pointee.httpStatus),
      ttfbMs: firstByte == 0 ? nil : Double(firstByte - 1) / 1_000_000,
      requestBytes: pointee.httpRequestBytes, responseBytes: pointee.httpResponseBytes,
      responseComplete: pointee.httpResponseComplete,
      reusedConnection: pointee.httpReused, httpProtocol: httpProtocol, streamId: isH2 ? pointee.streamID : nil,
      grpcStatus: grpcStatus, grpcMessage: grpcStatus == nil || pointee.grpcMessage.isEmpty ? nil : pointee.grpcMessage.string,
      role: role, peerAddress: cache.peerText(core.pointee.peer),
      peerPort: peerPort,
      tlsVersion: tlsVersion, dnsMs: setup.dns, connectMs: setup.connect, tlsMs: setup.tls)
  }

  /// Why HTTP stopped being read (``ConnectionCore/httpStop``).
  private var httpError: String? {
    let code = core.pointee.httpStop
    guard code != 0 else { return nil }
    if code == H2Traffic.poolExhausted {
      return "HTTP/2: no state left for this connection (more than \(CNM_H2_POOL_CAPACITY) at once, or no memory); not read"
    }
    return "HTTP/2: " + String(cString: ch2_status_name(ch2_status(UInt32(code))))
  }

  private var recordedError: RecordedError? {
    guard let call = HookedCall(rawValue: core.pointee.errorCall), call != .none else { return nil }
    if call == .sslHandshake { return .ssl(core.pointee.errorCode, call: call.name) }
    if call == .gnutlsHandshake { return .gnutls(core.pointee.errorCode, call: call.name) }
    if call == .nssHandshake { return .nss(core.pointee.errorCode, call: call.name) }
    return .errno(core.pointee.errorCode, call: call.name)
  }
}
