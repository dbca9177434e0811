extension Transaction {
  /// Reads one record line as `jsonLine()` writes it.
  ///
  /// Accepts surrounding whitespace (a trailing `\n` or `\r\n` included), members in any order,
  /// and unknown members (ignored, so newer writers stay readable). A missing optional field
  /// reads as `nil`; a missing required one is an error. `null` for `duration_ms` reads as NaN,
  /// the value the encoder writes as `null`. Integers are read exactly, never through `Double`.
  ///
  /// - Parameter jsonLine: One line of a record file.
  /// - Throws: `RecordDecodingError` naming what is wrong; it never traps on malformed input.
  public init(jsonLine: String) throws(RecordDecodingError) {
    var line = jsonLine
    let parsed = line.withUTF8 { bytes in
      Result { () throws(RecordDecodingError) -> JSONValue in try JSONParser.parse(bytes) }
    }
    try self.init(json: try parsed.get())
  }

  /// Reads one record line from raw bytes (a slice of a record file, without copying it into a
  /// `String` first). Invalid UTF-8 inside strings reads as U+FFFD.
  ///
  /// - Throws: `RecordDecodingError`.
  public init(jsonLine bytes: UnsafeRawBufferPointer) throws(RecordDecodingError) {
    let value = try JSONParser.parse(bytes.assumingMemoryBound(to: UInt8.self))
    try self.init(json: value)
  }

  init(json: JSONValue) throws(RecordDecodingError) {
    guard case .object(let members) = json else { throw .notAnObject }
    let fields = RecordFields(members)
    let kindName = try fields.string("kind")
    guard let kind = TransactionKind(rawValue: kindName) else { throw .unknownKind(kindName) }
    let pid = try fields.int32("pid")
    let process = try fields.string("process")
    let start = try fields.uint64("start_unix_ns")
    let duration = try fields.milliseconds("duration_ms") ?? .nan
    switch kind {
    case .dns:
      self = .dns(
        DNSRecord(
          pid: pid, process: process, startUnixNs: start, durationMs: duration,
          host: try fields.string("host"),
          addresses: try fields.strings("addresses"),
          error: try fields.error("error")))
    case .connection:
      self = .connection(
        ConnectionRecord(
          pid: pid, process: process, startUnixNs: start, durationMs: duration,
          id: try fields.uint64("id"),
          role: try fields.enumeration("role"),
          transport: try fields.enumeration("transport"),
          host: try fields.optionalString("host"),
          peerAddress: try fields.optionalString("peer_address"),
          peerPort: try fields.optionalPort("peer_port"),
          dnsMs: try fields.milliseconds("dns_ms"),
          connectMs: try fields.milliseconds("connect_ms"),
          tlsMs: try fields.milliseconds("tls_ms"),
          tlsVersion: try fields.optionalString("tls_version"),
          tlsALPN: try fields.optionalString("tls_alpn"),
          bytesSent: try fields.uint64("bytes_sent"),
          bytesReceived: try fields.uint64("bytes_received"),
          tlsBytesSent: try fields.optionalUInt64("tls_bytes_sent"),
          tlsBytesReceived: try fields.optionalUInt64("tls_bytes_received"),
          httpExchanges: try fields.optionalInt("http_exchanges"),
          httpError: try fields.optionalString("http_error"),
          error: try fields.error("error")))
    case .http:
      self = .http(
        HTTPRecord(
          pid: pid, process: process, startUnixNs: start, durationMs: duration,
          connectionId: try fields.uint64("connection_id"),
          scheme: try fields.enumeration("scheme"),
          method: try fields.string("method"),
          host: try fields.optionalString("host"),
          target: try fields.string("target"),
          status: try fields.optionalInt("status"),
          ttfbMs: try fields.milliseconds("ttfb_ms"),
          requestBytes: try fields.uint64("request_bytes"),
          responseBytes: try fields.uint64("response_bytes"),
          responseComplete: try fields.optionalBool("response_complete"),
          reusedConnection: try fields.bool("reused_connection"),
          httpProtocol: try fields.optionalEnumeration("protocol"),
          streamId: try fields.optionalUInt32("stream_id"),
          grpcStatus: try fields.optionalInt("grpc_status"),
          grpcMessage: try fields.optionalString("grpc_message"),
          role: try fields.optionalEnumeration("role"),
          peerAddress: try fields.optionalString("peer_address"),
          peerPort: try fields.optionalPort("peer_port"),
          tlsVersion: try fields.optionalString("tls_version"),
          dnsMs: try fields.milliseconds("dns_ms"),
          connectMs: try fields.milliseconds("connect_ms"),
          tlsMs: try fields.milliseconds("tls_ms")))
    }
  }
}

/// Typed access to the members of a record object. The last of duplicate keys wins.
private struct RecordFields {
  private var members: [String: JSONValue] = [:]

  init(_ list: [(key: String, value: JSONValue)]) {
    for (key, value) in list { members[key] = value }
  }

  /// The member, or `nil` when it is absent or `null`.
  private func value(_ key: String) -> JSONValue? {
    guard let value = members[key], value != .null else { return nil }
    return value
  }

  private func required(_ key: String) throws(RecordDecodingError) -> JSONValue {
    guard let value = members[key] else { throw .missingField(key) }
    return value
  }

  func string(_ key: String) throws(RecordDecodingError) -> String {
    guard case .string(let text) = try required(key) else {
      throw .wrongType(field: key, expected: "a string")
    }
    return text
  }

  func optionalString(_ key: String) throws(RecordDecodingError) -> String? {
    guard let value = value(key) else { return nil }
    guard case .string(let text) = value else { throw .wrongType(field: key, expected: "a string") }
    return text
  }

  func optionalBool(_ key: String) throws(RecordDecodingError) -> Bool? {
    guard let value = value(key) else { return nil }
    guard case .bool(let flag) = value else { throw .wrongType(field: key, expected: "a boolean") }
    return flag
  }

  func strings(_ key: String) throws(RecordDecodingError) -> [String] {
    guard case .array(let elements) = try required(key) else {
      throw .wrongType(field: key, expected: "an array of strings")
    }
    var result: [String] = []
    result.reserveCapacity(elements.count)
    for element in elements {
      guard case .string(let text) = element else {
        throw .wrongType(field: key, expected: "an array of strings")
      }
      result.append(text)
    }
    return result
  }

  func bool(_ key: String) throws(RecordDecodingError) -> Bool {
    guard case .bool(let flag) = try required(key) else {
      throw .wrongType(field: key, expected: "a boolean")
    }
    return flag
  }

  func enumeration<T: RawRepresentable<String>>(_ key: String) throws(RecordDecodingError) -> T {
    let text = try string(key)
    guard let value = T(rawValue: text) else { throw .invalidValue(field: key, value: text) }
    return value
  }

  func optionalEnumeration<T: RawRepresentable<String>>(_ key: String) throws(RecordDecodingError) -> T? {
    guard let text = try optionalString(key) else { return nil }
    guard let value = T(rawValue: text) else { throw .invalidValue(field: key, value: text) }
    return value
  }

  func uint64(_ key: String) throws(RecordDecodingError) -> UInt64 {
    guard let value = try optionalUInt64(key) else {
      throw members[key] == nil
        ? .missingField(key) : .wrongType(field: key, expected: "an integer")
    }
    return value
  }

  func optionalUInt64(_ key: String) throws(RecordDecodingError) -> UInt64? {
    guard let value = value(key) else { return nil }
    let (negative, magnitude) = try integer(value, key)
    guard !negative || magnitude == 0 else {
      throw .invalidValue(field: key, value: "-\(magnitude)")
    }
    return magnitude
  }

  func int32(_ key: String) throws(RecordDecodingError) -> Int32 {
    let (negative, magnitude) = try integer(try required(key), key)
    guard let value = Self.signed(negative, magnitude), let narrow = Int32(exactly: value) else {
      throw .invalidValue(field: key, value: (negative ? "-" : "") + "\(magnitude)")
    }
    return narrow
  }

  func optionalInt(_ key: String) throws(RecordDecodingError) -> Int? {
    guard let value = value(key) else { return nil }
    let (negative, magnitude) = try integer(value, key)
    guard let signed = Self.signed(negative, magnitude), let narrow = Int(exactly: signed) else {
      throw .invalidValue(field: key, value: (negative ? "-" : "") + "\(magnitude)")
    }
    return narrow
  }

  func optionalUInt32(_ key: String) throws(RecordDecodingError) -> UInt32? {
    guard let wide = try optionalUInt64(key) else { return nil }
    guard let narrow = UInt32(exactly: wide) else { throw .invalidValue(field: key, value: "\(wide)") }
    return narrow
  }

  func optionalPort(_ key: String) throws(RecordDecodingError) -> UInt16? {
    guard let wide = try optionalUInt64(key) else { return nil }
    guard let port = UInt16(exactly: wide) else {
      throw .invalidValue(field: key, value: "\(wide)")
    }
    return port
  }

  /// A duration: any JSON number that fits a `Double`, or `nil` for `null` or an absent member.
  func milliseconds(_ key: String) throws(RecordDecodingError) -> Double? {
    guard let value = value(key) else { return nil }
    guard case .number(let text) = value, let number = Double(text) else {
      throw .wrongType(field: key, expected: "a number")
    }
    guard number.isFinite else { throw .invalidValue(field: key, value: text) }
    return number
  }

  func error(_ key: String) throws(RecordDecodingError) -> RecordedError? {
    guard let value = value(key) else { return nil }
    guard case .object(let list) = value else {
      throw .wrongType(field: key, expected: "an object")
    }
    let inner = RecordFields(list)
    return RecordedError(
      call: try inner.nested(key, "call"),
      code: try inner.nested(key, "code", numbersAllowed: true),
      message: try inner.nested(key, "message"))
  }

  /// A string member of a nested object; a numeric `code` (as other writers may emit) is read
  /// as its text.
  private func nested(
    _ outer: String, _ key: String, numbersAllowed: Bool = false
  ) throws(RecordDecodingError) -> String {
    switch members[key] {
    case .string(let text): return text
    case .number(let text) where numbersAllowed: return text
    case nil: throw .missingField(outer + "." + key)
    default: throw .wrongType(field: outer + "." + key, expected: "a string")
    }
  }

  /// Splits an integer literal into sign and magnitude, exactly; rejects fractions, exponents
  /// and magnitudes beyond `UInt64`.
  private func integer(
    _ value: JSONValue, _ key: String
  ) throws(RecordDecodingError) -> (negative: Bool, magnitude: UInt64) {
    guard case .number(let text) = value else {
      throw .wrongType(field: key, expected: "an integer")
    }
    var negative = false
    var magnitude: UInt64 = 0
    for byte in text.utf8 {
      if byte == UInt8(ascii: "-") {
        negative = true
        continue
      }
      guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) else {
        throw .wrongType(field: key, expected: "an integer")
      }
      let (times10, overflow1) = magnitude.multipliedReportingOverflow(by: 10)
      let (sum, overflow2) = times10.addingReportingOverflow(UInt64(byte - UInt8(ascii: "0")))
      guard !overflow1 && !overflow2 else { throw .invalidValue(field: key, value: text) }
      magnitude = sum
    }
    return (negative, magnitude)
  }

  private static func signed(_ negative: Bool, _ magnitude: UInt64) -> Int64? {
    if !negative { return Int64(exactly: magnitude) }
    if magnitude == UInt64(Int64.max) + 1 { return .min }
    return Int64(exactly: magnitude).map { -$0 }
  }
}
