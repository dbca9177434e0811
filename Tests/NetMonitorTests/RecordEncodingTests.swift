import Foundation
import Testing
import TestSupport

@testable import NetMonitor

@Suite("Record encoding")
struct RecordEncodingTests {
  static let commonKeys = ["kind", "pid", "process", "start_unix_ns", "duration_ms"]
  static let expectedKeys: [TransactionKind: [String]] = [
    .dns: commonKeys + ["host", "addresses", "error"],
    .connection: commonKeys + [
      "id", "role", "transport", "host", "peer_address", "peer_port", "dns_ms", "connect_ms",
      "tls_ms", "tls_version", "tls_alpn", "bytes_sent", "bytes_received", "tls_bytes_sent",
      "tls_bytes_received", "http_exchanges", "http_error", "error",
    ],
    .http: commonKeys + [
      "connection_id", "scheme", "method", "host", "target", "status", "ttfb_ms", "request_bytes",
      "response_bytes", "response_complete", "reused_connection", "protocol", "stream_id", "grpc_status",
      "grpc_message", "role", "peer_address", "peer_port", "dns_ms", "connect_ms", "tls_ms", "tls_version",
    ],
  ]

  @Test("every sample is valid JSON with exactly the ARCHITECTURE.md keys, in order")
  func keySetsAndOrder() throws {
    for transaction in RecordSamples.all {
      let line = transaction.jsonLine()
      let object = try RecordSamples.foundationObject(line)
      let expected = try #require(Self.expectedKeys[transaction.kind])
      #expect(Set(object.keys) == Set(expected))
      #expect(try RecordSamples.orderedKeys(line) == expected)
      #expect(object["kind"] as? String == transaction.kind.rawValue)
      #expect(!line.contains("\n"))
    }
  }

  @Test("appendJSONLine appends exactly jsonLine() and a newline, record after record, into one buffer")
  func appendedLines() {
    var rng = SplitMix64(seed: 0xB0FF)
    let transactions = RecordSamples.all + (0..<200).map { _ in RecordSamples.randomTransaction(&rng) }
    var buffer: [UInt8] = Array("kept\n".utf8)
    var expected = "kept\n"
    for transaction in transactions {
      transaction.appendJSONLine(to: &buffer)
      expected += transaction.jsonLine() + "\n"
    }
    #expect(String(decoding: buffer, as: UTF8.self) == expected)
    #expect(transactions.allSatisfy { $0.jsonBytes(appendingNewline: true) == Array(($0.jsonLine() + "\n").utf8) })
  }

  @Test("the exact line of each kind")
  func exactLines() {
    #expect(
      Transaction.dns(RecordSamples.dns).jsonLine()
        == #"{"kind":"dns","pid":4242,"process":"curl","start_unix_ns":1767225600123456789,"duration_ms":12.345,"host":"example.com","addresses":["93.184.215.14","2606:2800:21f:cb07:6820:80da:af6b:8b2c"],"error":null}"#
    )
    #expect(
      Transaction.dns(RecordSamples.dnsFailure).jsonLine()
        == #"{"kind":"dns","pid":4242,"process":"curl","start_unix_ns":1767225600000000000,"duration_ms":30.5,"host":"no-such-host.invalid","addresses":[],"error":{"call":"getaddrinfo","code":"EAI_NONAME","message":"Name or service not known"}}"#
    )
    #expect(
      Transaction.connection(RecordSamples.connection).jsonLine()
        == #"{"kind":"connection","pid":4242,"process":"curl","start_unix_ns":1767225600135000000,"duration_ms":250.75,"id":7,"role":"client","transport":"tcp","host":"example.com","peer_address":"93.184.215.14","peer_port":443,"dns_ms":12.345,"connect_ms":20.001,"tls_ms":41.2,"tls_version":"TLSv1.3","tls_alpn":null,"bytes_sent":517,"bytes_received":5120,"tls_bytes_sent":78,"tls_bytes_received":1256,"http_exchanges":1,"http_error":null,"error":null}"#
    )
    #expect(
      Transaction.connection(RecordSamples.refused).jsonLine()
        == #"{"kind":"connection","pid":99,"process":"python3","start_unix_ns":1767225600000000001,"duration_ms":0.25,"id":8,"role":"client","transport":"tcp","host":null,"peer_address":"127.0.0.1","peer_port":9,"dns_ms":null,"connect_ms":0.25,"tls_ms":null,"tls_version":null,"tls_alpn":null,"bytes_sent":0,"bytes_received":0,"tls_bytes_sent":null,"tls_bytes_received":null,"http_exchanges":0,"http_error":null,"error":{"call":"connect","code":"ECONNREFUSED","message":"Connection refused"}}"#
    )
    #expect(
      Transaction.http(RecordSamples.http).jsonLine()
        == #"{"kind":"http","pid":4242,"process":"curl","start_unix_ns":1767225600197000000,"duration_ms":180.5,"connection_id":7,"scheme":"https","method":"GET","host":"example.com","target":"/search?q=swift&access_token=REDACTED","status":200,"ttfb_ms":150.25,"request_bytes":78,"response_bytes":1256,"response_complete":true,"reused_connection":false,"protocol":null,"stream_id":null,"grpc_status":null,"grpc_message":null,"role":"client","peer_address":"93.184.215.14","peer_port":443,"dns_ms":12.345,"connect_ms":20.001,"tls_ms":41.2,"tls_version":"TLSv1.3"}"#
    )
  }

  @Test("nil properties are null, never invented")
  func nulls() throws {
    let bare = ConnectionRecord(
      pid: 1, process: "p", startUnixNs: 0, durationMs: 0, id: 1, role: .server,
      transport: .unix, peerAddress: nil, peerPort: nil, bytesSent: 0, bytesReceived: 0,
      httpExchanges: nil)
    let object = try RecordSamples.foundationObject(Transaction.connection(bare).jsonLine())
    for key in [
      "host", "peer_address", "peer_port", "dns_ms", "connect_ms", "tls_ms", "tls_version",
      "tls_bytes_sent", "tls_bytes_received", "http_exchanges", "error",
    ] {
      #expect(object[key] is NSNull, "\(key) should be null")
    }
    let noResponse = HTTPRecord(
      pid: 1, process: "p", startUnixNs: 0, durationMs: 1, connectionId: 1, scheme: .http,
      method: "GET", host: nil, target: "/", status: nil, ttfbMs: nil, requestBytes: 10,
      responseBytes: 0, reusedConnection: true)
    let http = try RecordSamples.foundationObject(Transaction.http(noResponse).jsonLine())
    #expect(http["host"] is NSNull)
    #expect(http["status"] is NSNull)
    #expect(http["ttfb_ms"] is NSNull)
    #expect(http["reused_connection"] as? Bool == true)
  }

  @Test(
    "milliseconds: at most three decimals, at least one; non-finite is null",
    arguments: [
      (12.345, "12.345"), (2.5, "2.5"), (0, "0.0"), (-0.0, "0.0"), (3, "3.0"), (0.0004, "0.0"),
      (0.0005, "0.001"), (1.23456, "1.235"), (-7.25, "-7.25"), (0.01, "0.01"), (100.1, "100.1"),
      (999.9999, "1000.0"), (Double.nan, "null"), (Double.infinity, "null"),
      (-Double.infinity, "null"), (1e20, "1e+20"),
    ])
  func milliseconds(value: Double, expected: String) throws {
    let bytes = JSONWriter.bytes { $0.milliseconds(value) }
    #expect(String(decoding: bytes, as: UTF8.self) == expected)
  }

  @Test("integers are exact at the extremes")
  func integers() throws {
    let record = ConnectionRecord(
      pid: .min, process: "p", startUnixNs: .max, durationMs: 1, id: .max, role: .client,
      transport: .udp, peerAddress: "::1", peerPort: .max, bytesSent: .max,
      bytesReceived: UInt64(1) << 53 + 1, httpExchanges: .min)
    let line = Transaction.connection(record).jsonLine()
    #expect(line.contains(#""pid":-2147483648"#))
    #expect(line.contains(#""start_unix_ns":18446744073709551615"#))
    #expect(line.contains(#""peer_port":65535"#))
    #expect(line.contains(#""bytes_received":9007199254740993"#))
    #expect(line.contains(#""http_exchanges":-9223372036854775808"#))
    _ = try RecordSamples.foundationObject(line)
    #expect(try Transaction(jsonLine: line) == .connection(record))
  }

  @Test("integers of every length, and the numbers around each power of ten, are written as Swift writes them")
  func integerLengths() {
    var values: [UInt64] = [0, 1, 9, UInt64.max, UInt64.max - 1]
    var power: UInt64 = 10
    for _ in 1...19 {
      values += [power - 1, power, power + 1, power + power / 2]
      if power > UInt64.max / 10 { break }
      power *= 10
    }
    for value in values {
      #expect(String(decoding: JSONWriter.bytes { $0.integer(value) }, as: UTF8.self) == String(value))
      let signed = Int64(truncatingIfNeeded: value)
      #expect(String(decoding: JSONWriter.bytes { $0.integer(signed) }, as: UTF8.self) == String(signed))
    }
  }

  @Test("strings of every length up to 80, plain or with a byte to escape at any place, come out whole")
  func stringLengths() throws {
    for length in 0...80 {
      // Printable ASCII from `#` to `[`: none needs an escape.
      let plain = String((0..<length).map { Character(UnicodeScalar(UInt8(0x23 + $0 % 57))) })
      #expect(String(decoding: JSONWriter.bytes { $0.string(plain) }, as: UTF8.self) == "\"" + plain + "\"")
      for escaped in ["\"", "\\", "\n", "\u{7F}", "é"] {
        for place in 0..<length {
          var characters = Array(plain)
          characters[place] = Character(escaped)
          let text = String(characters)
          let object = try RecordSamples.foundationObject(
            String(decoding: JSONWriter.bytes { writer in
              writer.beginObject()
              writer.key("host")
              writer.string(text)
              writer.endObject()
            }, as: UTF8.self))
          #expect(object["host"] as? String == text)
        }
      }
    }
  }

  @Test("hostile strings are escaped into valid JSON and read back unchanged")
  func hostileStrings() throws {
    for text in RecordSamples.hostileStrings {
      let record = DNSRecord(
        pid: 1, process: text, startUnixNs: 1, durationMs: 1, host: text, addresses: [text, text],
        error: RecordedError(call: text, code: text, message: text))
      let line = Transaction.dns(record).jsonLine()
      let object = try RecordSamples.foundationObject(line)
      #expect(object["host"] as? String == text)
      #expect(object["addresses"] as? [String] == [text, text])
      #expect(!line.utf8.contains { $0 < 0x20 || $0 == 0x7F }, "raw control byte in \(line)")
      #expect(!line.contains("\u{2028}") && !line.contains("\u{2029}"))
      #expect(try Transaction(jsonLine: line) == .dns(record))
    }
  }

  @Test("text longer than the writer's inline buffer, and escapes across its end at every offset, come out whole")
  func longText() throws {
    let piece = "a\"b\\c\n\u{2028}é🧪\u{FEFF}"
    for prefix in 0..<40 {
      let text = String(repeating: "x", count: prefix) + String(repeating: piece, count: 30)
      let bytes = JSONWriter.bytes { writer in
        writer.beginObject()
        writer.key("start_unix_ns")
        writer.integer(UInt64.max)
        writer.key("target")
        writer.string(text)
        writer.key("addresses")
        writer.strings([text, "", text])
        writer.endObject()
      }
      let line = String(decoding: bytes, as: UTF8.self)
      #expect(line.hasPrefix(#"{"start_unix_ns":18446744073709551615,"target":""#))
      let object = try RecordSamples.foundationObject(line)
      #expect(object["target"] as? String == text)
      #expect(object["addresses"] as? [String] == [text, "", text])
    }
  }

  @Test("specific escapes")
  func escapes() {
    let bytes = JSONWriter.bytes { $0.string("a\"b\\c\n\u{0}\u{1F}\u{7F}\u{2028}é🧪") }
    #expect(
      String(decoding: bytes, as: UTF8.self)
        == #""a\"b\\c\u000a\u0000\u001f\u007f\u2028é🧪""#)
  }

  @Test("invalid UTF-8 from the wire becomes U+FFFD and stays valid JSON")
  func invalidUTF8() throws {
    let wire: [UInt8] = [0x47, 0x45, 0x54, 0xFF, 0xFE, 0xC0, 0xAF, 0xE2, 0x82]
    let method = String(decoding: wire, as: UTF8.self)
    let record = HTTPRecord(
      pid: 1, process: "p", startUnixNs: 1, durationMs: 1, connectionId: 1, scheme: .http,
      method: method, host: nil, target: "/", status: nil, ttfbMs: nil, requestBytes: 0,
      responseBytes: 0, reusedConnection: false)
    let line = Transaction.http(record).jsonLine()
    let object = try RecordSamples.foundationObject(line)
    let decoded = try #require(object["method"] as? String)
    #expect(decoded.hasPrefix("GET\u{FFFD}"))
    #expect(decoded == method)
  }

  @Test("RecordedError factories name their codes")
  func errorFactories() {
    #expect(RecordedError.errno(ECONNREFUSED, call: "connect").code == "ECONNREFUSED")
    #expect(RecordedError.errno(ETIMEDOUT, call: "connect").message == "Connection timed out")
    #expect(RecordedError.errno(4095, call: "read").code == "errno 4095")
    #expect(RecordedError.addressInfo(EAI_AGAIN).code == "EAI_AGAIN")
    #expect(RecordedError.addressInfo(-5).code == "EAI_NODATA")
    let system = RecordedError.addressInfo(-11, systemErrno: EMFILE)
    #expect(system.code == "EAI_SYSTEM")
    #expect(system.message.contains("EMFILE"))
    #expect(RecordedError.ssl(5, call: "SSL_do_handshake").code == "SSL_ERROR_SYSCALL")
    #expect(
      RecordedError.ssl(1, call: "SSL_connect", message: "certificate verify failed").message
        == "certificate verify failed")
    #expect(RecordedError.ssl(77, call: "SSL_read").code == "SSL_ERROR 77")
  }
}
