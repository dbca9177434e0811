import Foundation
import Testing
import TestSupport

@testable import NetMonitor

/// Sample and random records shared by the record, redaction and sink tests.
enum RecordSamples {
  static let dns = DNSRecord(
    pid: 4242, process: "curl", startUnixNs: 1_767_225_600_123_456_789, durationMs: 12.345,
    host: "example.com", addresses: ["93.184.215.14", "2606:2800:21f:cb07:6820:80da:af6b:8b2c"])

  static let dnsFailure = DNSRecord(
    pid: 4242, process: "curl", startUnixNs: 1_767_225_600_000_000_000, durationMs: 30.5,
    host: "no-such-host.invalid", addresses: [], error: .addressInfo(EAI_NONAME))

  static let connection = ConnectionRecord(
    pid: 4242, process: "curl", startUnixNs: 1_767_225_600_135_000_000, durationMs: 250.75,
    id: 7, role: .client, transport: .tcp, host: "example.com", peerAddress: "93.184.215.14",
    peerPort: 443, dnsMs: 12.345, connectMs: 20.001, tlsMs: 41.2, tlsVersion: "TLSv1.3",
    bytesSent: 517, bytesReceived: 5_120, tlsBytesSent: 78, tlsBytesReceived: 1_256,
    httpExchanges: 1)

  static let refused = ConnectionRecord(
    pid: 99, process: "python3", startUnixNs: 1_767_225_600_000_000_001, durationMs: 0.25,
    id: 8, role: .client, transport: .tcp, peerAddress: "127.0.0.1", peerPort: 9,
    connectMs: 0.25, bytesSent: 0, bytesReceived: 0, httpExchanges: 0,
    error: .errno(ECONNREFUSED, call: "connect"))

  static let http = HTTPRecord(
    pid: 4242, process: "curl", startUnixNs: 1_767_225_600_197_000_000, durationMs: 180.5,
    connectionId: 7, scheme: .https, method: "GET", host: "example.com",
    target: "/search?q=swift&access_token=abc123", status: 200, ttfbMs: 150.25,
    requestBytes: 78, responseBytes: 1_256, reusedConnection: false, role: .client,
    peerAddress: "93.184.215.14", peerPort: 443, tlsVersion: "TLSv1.3", dnsMs: 12.345, connectMs: 20.001,
    tlsMs: 41.2)

  static let all: [Transaction] = [
    .dns(dns), .dns(dnsFailure), .connection(connection), .connection(refused), .http(http),
  ]

  // MARK: - Random records

  /// Strings that stress the encoder: quotes, backslashes, every C0 control, DEL, U+2028,
  /// emoji, combining marks, and text decoded from invalid UTF-8.
  static let hostileStrings: [String] = [
    "", "plain", "quote\"inside", "back\\slash", "line\nbreak", "tab\tand\rcarriage",
    "nul\u{0}byte",
    "\u{1}\u{1F}\u{7F}", "bell\u{7}", "sep\u{2028}para\u{2029}", "emoji 🧪👩‍💻", "e\u{301}",
    "日本語", String(decoding: [0x66, 0xFF, 0xC3, 0x28, 0xED, 0xA0, 0x80], as: UTF8.self),
    "</script><script>", "{\"kind\":\"dns\"}", "\\u0000", "/", "\u{FEFF}bom",
  ]

  static func randomString(_ rng: inout SplitMix64) -> String {
    switch rng.next() % 3 {
    case 0: return hostileStrings[Int(rng.next() % UInt64(hostileStrings.count))]
    case 1:
      var scalars = String.UnicodeScalarView()
      for _ in 0..<Int(rng.next() % 24) {
        let pick = rng.next() % 10
        let value: UInt32 =
          pick < 5
          ? UInt32(rng.next() % 0x80)
          : pick < 8 ? UInt32(0x80 + rng.next() % 0x780) : UInt32(0x1F300 + rng.next() % 0x300)
        if let scalar = Unicode.Scalar(value) { scalars.append(scalar) }
      }
      return String(scalars)
    default:
      let bytes = (0..<Int(rng.next() % 20)).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
      return String(decoding: bytes, as: UTF8.self)
    }
  }

  /// Milliseconds that survive the 3-decimal encoding exactly: a whole number of microseconds.
  static func randomMilliseconds(_ rng: inout SplitMix64) -> Double {
    let micros = Int64(rng.next() % 10_000_000_000)
    return Double(micros) / 1000
  }

  static func randomOptionalMilliseconds(_ rng: inout SplitMix64) -> Double? {
    rng.next() % 3 == 0 ? nil : randomMilliseconds(&rng)
  }

  static func randomOptional<T>(_ rng: inout SplitMix64, _ make: (inout SplitMix64) -> T) -> T?
  {
    rng.next() % 3 == 0 ? nil : make(&rng)
  }

  static func randomError(_ rng: inout SplitMix64) -> RecordedError? {
    switch rng.next() % 4 {
    case 0: nil
    case 1: .errno(Int32(rng.next() % 140), call: "connect")
    case 2: .addressInfo(-Int32(rng.next() % 12) - 1)
    default:
      RecordedError(
        call: randomString(&rng), code: randomString(&rng), message: randomString(&rng))
    }
  }

  static func randomTransaction(_ rng: inout SplitMix64) -> Transaction {
    let pid = Int32(truncatingIfNeeded: rng.next())
    let process = randomString(&rng)
    let start = rng.next()
    let duration = randomMilliseconds(&rng)
    switch rng.next() % 3 {
    case 0:
      return .dns(
        DNSRecord(
          pid: pid, process: process, startUnixNs: start, durationMs: duration,
          host: randomString(&rng),
          addresses: (0..<Int(rng.next() % 4)).map { _ in randomString(&rng) },
          error: randomError(&rng)))
    case 1:
      return .connection(
        ConnectionRecord(
          pid: pid, process: process, startUnixNs: start, durationMs: duration,
          id: rng.next(), role: rng.next() % 2 == 0 ? .client : .server,
          transport: ConnectionTransport.allCases[Int(rng.next() % 3)],
          host: randomOptional(&rng, randomString), peerAddress: randomOptional(&rng, randomString),
          peerPort: randomOptional(&rng) { UInt16(truncatingIfNeeded: $0.next()) },
          dnsMs: randomOptionalMilliseconds(&rng), connectMs: randomOptionalMilliseconds(&rng),
          tlsMs: randomOptionalMilliseconds(&rng), tlsVersion: randomOptional(&rng, randomString),
          bytesSent: rng.next(), bytesReceived: rng.next(),
          tlsBytesSent: randomOptional(&rng) { $0.next() },
          tlsBytesReceived: randomOptional(&rng) { $0.next() },
          httpExchanges: randomOptional(&rng) { Int(truncatingIfNeeded: $0.next()) },
          error: randomError(&rng)))
    default:
      return .http(
        HTTPRecord(
          pid: pid, process: process, startUnixNs: start, durationMs: duration,
          connectionId: rng.next(), scheme: rng.next() % 2 == 0 ? .http : .https,
          method: randomString(&rng), host: randomOptional(&rng, randomString),
          target: "/" + randomString(&rng) + "?token=" + randomString(&rng),
          status: randomOptional(&rng) { Int(truncatingIfNeeded: $0.next()) },
          ttfbMs: randomOptionalMilliseconds(&rng), requestBytes: rng.next(),
          responseBytes: rng.next(), reusedConnection: rng.next() % 2 == 0,
          role: randomOptional(&rng) { $0.next() % 2 == 0 ? .client : .server },
          peerAddress: randomOptional(&rng, randomString),
          peerPort: randomOptional(&rng) { UInt16(truncatingIfNeeded: $0.next()) },
          tlsVersion: randomOptional(&rng, randomString), dnsMs: randomOptionalMilliseconds(&rng),
          connectMs: randomOptionalMilliseconds(&rng), tlsMs: randomOptionalMilliseconds(&rng)))
    }
  }

  /// The line parsed by Foundation: proof that it is valid JSON, independent of our parser.
  static func foundationObject(_ line: String) throws -> [String: Any] {
    let object = try JSONSerialization.jsonObject(with: Data(line.utf8), options: [])
    return try #require(object as? [String: Any])
  }

  /// The keys of a line's top-level object in the order they were written.
  static func orderedKeys(_ line: String) throws -> [String] {
    var copy = line
    let value = try copy.withUTF8 { try JSONParser.parse($0) }
    guard case .object(let members) = value else { throw RecordDecodingError.notAnObject }
    return members.map(\.key)
  }
}

@Suite("Record samples")
struct RecordSamplesTests {
  @Test("the samples print the documented example lines")
  func printExamples() {
    for transaction in RecordSamples.all { print(transaction.jsonLine()) }
  }
}
