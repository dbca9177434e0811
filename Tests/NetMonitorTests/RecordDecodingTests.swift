import Foundation
import Testing
import TestSupport

@testable import NetMonitor

@Suite("Record decoding")
struct RecordDecodingTests {
  /// Bytes that JSON gives meaning to, for the fuzzer to insert.
  static let jsonBytes = Array(#"{}[]":,\-0123456789.eEtrufalsn u"#.utf8)

  @Test("randomized records round-trip exactly (5000, seeded)")
  func roundTrip() throws {
    var rng = SplitMix64(seed: 0x5EED)
    for _ in 0..<5000 {
      let transaction = RecordSamples.randomTransaction(&rng)
      let line = transaction.jsonLine()
      _ = try RecordSamples.foundationObject(line)
      #expect(try Transaction(jsonLine: line) == transaction, "\(line)")
      let bytes = transaction.jsonBytes(appendingNewline: true)
      let fromBytes = try bytes.withUnsafeBytes { try Transaction(jsonLine: $0) }
      #expect(fromBytes == transaction)
    }
  }

  @Test("an http line written before the connection fields existed reads back with them nil")
  func httpLineWithoutConnectionFields() throws {
    let line =
      #"{"kind":"http","pid":1,"process":"curl","start_unix_ns":5,"duration_ms":1.5,"connection_id":7,"scheme":"http","method":"GET","host":"a","target":"/","status":200,"ttfb_ms":1.0,"request_bytes":78,"response_bytes":90,"reused_connection":true}"#
    guard case .http(let record) = try Transaction(jsonLine: line) else {
      Issue.record("not an http record")
      return
    }
    #expect(record.role == nil && record.peerAddress == nil && record.peerPort == nil)
    #expect(record.dnsMs == nil && record.connectMs == nil && record.tlsMs == nil && record.tlsVersion == nil)
    #expect(record.responseBytes == 90 && record.reusedConnection)
  }

  @Test("null duration reads back as NaN")
  func nanDuration() throws {
    var record = RecordSamples.dns
    record.durationMs = .nan
    let line = Transaction.dns(record).jsonLine()
    #expect(line.contains(#""duration_ms":null"#))
    #expect(try Transaction(jsonLine: line).durationMs.isNaN)
  }

  @Test("lenient where it is safe: whitespace, member order, unknown members, absent optionals")
  func lenient() throws {
    let line = """
       { "error" : null, "addresses":[ "::1" ] ,"host":"h","future":{"x":[1,2,{}]},
      "duration_ms":1e1,"start_unix_ns":5,"process":"p\\u00e9\\ud83e\\uddea","pid":-3,"kind":"dns"}\r\n
      """
    let decoded = try Transaction(jsonLine: line)
    #expect(
      decoded
        == .dns(
          DNSRecord(
            pid: -3, process: "pé🧪", startUnixNs: 5, durationMs: 10, host: "h",
            addresses: ["::1"])))
    let minimal =
      #"{"kind":"connection","pid":1,"process":"p","start_unix_ns":1,"duration_ms":1,"id":1,"role":"server","transport":"unix","bytes_sent":0,"bytes_received":0}"#
    guard case .connection(let record) = try Transaction(jsonLine: minimal) else {
      Issue.record("not a connection")
      return
    }
    #expect(record.peerPort == nil && record.httpExchanges == nil && record.error == nil)
  }

  @Test(
    "malformed lines are rejected with a typed error",
    arguments: [
      ("", "malformed"), ("   ", "malformed"), ("[]", "notAnObject"), ("42", "notAnObject"),
      ("{", "malformed"), (#"{"kind":"dns"}x"#, "malformed"), (#"{"kind":"dns",}"#, "malformed"),
      (#"{"kind":"smtp"}"#, "unknownKind"), (#"{"pid":1}"#, "missingField"),
      (#"{"kind":"dns","pid":"1"}"#, "wrongType"), (#"{"kind":"dns","pid":1.5}"#, "wrongType"),
      (#"{"kind":"dns","pid":4294967296}"#, "invalidValue"),
      (#"{"kind":"dns","pid":1,"process":"p","start_unix_ns":-1}"#, "invalidValue"),
      (
        #"{"kind":"dns","pid":1,"process":"p","start_unix_ns":18446744073709551616}"#,
        "invalidValue"
      ),
      (#"{"kind":"dns","pid":1,"process":"p\u0001"}"#, "missingField"),
      ("{\"kind\":\"dns\",\"pid\":1,\"process\":\"a\u{1}b\"}", "malformed"),
      (#"{"kind":"dns","pid":01}"#, "malformed"), (#"{"kind":"dns","pid":-}"#, "malformed"),
      (#"{"kind":"dns","pid":1.}"#, "malformed"), (#"{"kind":"dns","pid":1e}"#, "malformed"),
      (#"{"kind":"dns","pid":tru}"#, "malformed"), (#"{"kind":"dns","x":"\q"}"#, "malformed"),
      (#"{"kind":"dns","x":"\u12"}"#, "malformed"), (#"{"kind":"dns","x":"abc"#, "malformed"),
      (#"{"kind":"dns","pid":1,"process":"p","start_unix_ns":1,"duration_ms":"1"}"#, "wrongType"),
      (
        #"{"kind":"connection","pid":1,"process":"p","start_unix_ns":1,"duration_ms":1,"id":1,"role":"peer"}"#,
        "invalidValue"
      ),
      (
        #"{"kind":"connection","pid":1,"process":"p","start_unix_ns":1,"duration_ms":1,"id":1,"role":"client","transport":"tcp","peer_port":65536,"bytes_sent":0,"bytes_received":0}"#,
        "invalidValue"
      ),
      (
        #"{"kind":"dns","pid":1,"process":"p","start_unix_ns":1,"duration_ms":1,"host":"h","addresses":[1],"error":null}"#,
        "wrongType"
      ),
      (
        #"{"kind":"dns","pid":1,"process":"p","start_unix_ns":1,"duration_ms":1,"host":"h","addresses":[],"error":{"call":"x"}}"#,
        "missingField"
      ),
    ])
  func rejects(line: String, expected: String) {
    do {
      let transaction = try Transaction(jsonLine: line)
      Issue.record("accepted \(line) as \(transaction)")
    } catch {
      let name: String =
        switch error {
        case .malformedJSON: "malformed"
        case .notAnObject: "notAnObject"
        case .missingField: "missingField"
        case .wrongType: "wrongType"
        case .invalidValue: "invalidValue"
        case .unknownKind: "unknownKind"
        }
      #expect(name == expected, "\(line): \(error)")
      #expect(!error.description.isEmpty)
    }
  }

  @Test("deep nesting is refused, not a stack overflow")
  func deepNesting() {
    for opener in ["[", "{\"a\":"] {
      let line = "{\"kind\":\"dns\",\"x\":" + String(repeating: opener, count: 100_000)
      #expect(throws: RecordDecodingError.self) { try Transaction(jsonLine: line) }
    }
  }

  @Test("unpaired surrogate escapes become U+FFFD")
  func surrogates() throws {
    let line =
      #"{"kind":"dns","pid":1,"process":"\ud800x\udc00\ud83e\u0041","start_unix_ns":1,"duration_ms":1,"host":"h","addresses":[],"error":null}"#
    #expect(try Transaction(jsonLine: line).process == "\u{FFFD}x\u{FFFD}\u{FFFD}A")
  }

  @Test("fuzz: mutated and random lines never crash; what we accept, Foundation accepts")
  func fuzz() throws {
    var rng = SplitMix64(seed: 0xF022)
    var accepted = 0
    for round in 0..<20_000 {
      var bytes: [UInt8]
      if round % 10 == 0 {
        bytes = (0..<Int(rng.next() % 200)).map { _ in
          let pick = rng.next() % 4
          return pick == 0
            ? Self.jsonBytes[Int(rng.next() % UInt64(Self.jsonBytes.count))]
            : UInt8(truncatingIfNeeded: rng.next())
        }
      } else {
        bytes = RecordSamples.randomTransaction(&rng).jsonBytes(appendingNewline: false)
        let mutations = round % 3 == 0 ? 1 : Int(1 + rng.next() % 4)
        for _ in 0..<mutations where !bytes.isEmpty {
          let at = Int(rng.next() % UInt64(bytes.count))
          switch rng.next() % 6 {
          case 0: bytes[at] = UInt8(truncatingIfNeeded: rng.next())
          case 1: bytes.remove(at: at)
          case 2:
            bytes.insert(Self.jsonBytes[Int(rng.next() % UInt64(Self.jsonBytes.count))], at: at)
          case 3: bytes.removeSubrange(at...)
          case 4: bytes.insert(contentsOf: bytes[at..<min(bytes.count, at + 8)], at: at)
          default: bytes[at] ^= 1 << (rng.next() % 8)
          }
        }
      }
      let result = bytes.withUnsafeBytes { buffer in
        Result { () throws(RecordDecodingError) in try Transaction(jsonLine: buffer) }
      }
      let parsed = bytes.withUnsafeBufferPointer { buffer in
        Result { () throws(RecordDecodingError) in try JSONParser.parse(buffer) }
      }
      if case .success(let transaction) = result {
        accepted += 1
        // What was accepted encodes to a line that is a fixed point of decode→encode.
        let line = transaction.jsonLine()
        #expect((try? Transaction(jsonLine: line))?.jsonLine() == line, "\(line)")
      }
      if case .success = parsed, case .success = result, !bytes.contains(UInt8(ascii: "\\")),
        String(validating: bytes, as: UTF8.self) != nil
      {
        // Our parser is no more permissive than Foundation's, except where it repairs on purpose
        // (invalid UTF-8 and unpaired surrogate escapes become U+FFFD; Foundation rejects them).
        #expect(
          (try? JSONSerialization.jsonObject(with: Data(bytes), options: [.fragmentsAllowed]))
            != nil, "\(String(decoding: bytes, as: UTF8.self))")
      }
    }
    #expect(accepted > 100)
  }
}
