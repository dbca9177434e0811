/// The two TLS handshake messages a connection's first bytes can show in the clear, read when the
/// connection's TLS is no library the hooks decode (Java's, rustls, an OpenSSL linked into a
/// stripped executable): the server name a ClientHello asks for (SNI, RFC 6066 §3) and the version
/// a ServerHello chooses (RFC 8446 §4.1.3, `supported_versions` §4.2.1). The HTTP inside stays
/// unread; the connection record tells the TLS version, and the host when no lookup named it.
/// Reads only the bytes given (a first segment, checked at every step); never allocates.
enum TLSOnTheWire {
  /// The message a buffer starts with, when it starts with a TLS handshake record.
  enum Hello {
    case client(serverName: UnsafeRawBufferPointer?)
    case server(version: StaticString)
  }

  /// The hello a buffer starts with: a TLS handshake record, or (`afterRecordHeader`) the
  /// handshake message alone, its record header read by an earlier call (GnuTLS reads the 5-byte
  /// header first).
  static func hello(_ bytes: UnsafeRawBufferPointer, afterRecordHeader: Bool = false) -> Hello? {
    guard afterRecordHeader || isHandshakeRecordHeader(bytes) else { return nil }
    var reader = Reader(afterRecordHeader ? bytes : UnsafeRawBufferPointer(rebasing: bytes[5...]))
    // Type, length, legacy_version, random.
    guard let type = reader.byte(), reader.skip(3), let legacyVersion = reader.uint16(), reader.skip(32) else { return nil }
    switch type {
    case 1: return .client(serverName: serverName(after: &reader))
    case 2: return version(after: &reader, legacyVersion: legacyVersion).map { .server(version: $0) }
    default: return nil
    }
  }

  /// TLSPlaintext's header: a handshake (22), legacy version 3.x, length.
  static func isHandshakeRecordHeader(_ bytes: UnsafeRawBufferPointer) -> Bool {
    bytes.count >= 5 && bytes[0] == 22 && bytes[1] == 3
  }

  /// ClientHello after its random: session id, cipher suites, compression methods, extensions.
  private static func serverName(after reader: inout Reader) -> UnsafeRawBufferPointer? {
    guard let session = reader.byte(), reader.skip(Int(session)), let suites = reader.uint16(),
      reader.skip(Int(suites)), let methods = reader.byte(), reader.skip(Int(methods))
    else { return nil }
    return reader.extensionData(0).flatMap { data in  // server_name
      // ServerNameList: length, then entries of type (0: host_name) and a 16-bit length.
      var list = Reader(data)
      guard list.skip(2), list.byte() == 0, let length = list.uint16() else { return nil }
      return list.bytes(Int(length))
    }
  }

  /// ServerHello after its random: session id, cipher suite, compression method, extensions. The
  /// version is `supported_versions` when present (TLS 1.3 keeps 1.2 in legacy_version).
  private static func version(after reader: inout Reader, legacyVersion: UInt16) -> StaticString? {
    guard let session = reader.byte(), reader.skip(Int(session)), reader.skip(3) else { return nil }
    let chosen = reader.extensionData(43).flatMap { data -> UInt16? in  // supported_versions
      var selected = Reader(data)
      return selected.uint16()
    }
    switch chosen ?? legacyVersion {
    case 0x0304: return "TLSv1.3"
    case 0x0303: return "TLSv1.2"
    case 0x0302: return "TLSv1.1"
    case 0x0301: return "TLSv1"
    default: return nil
    }
  }

  /// A cursor over the bytes; every read checks what is left.
  private struct Reader {
    let bytes: UnsafeRawBufferPointer
    var offset = 0

    init(_ bytes: UnsafeRawBufferPointer) { self.bytes = bytes }

    mutating func byte() -> UInt8? {
      guard offset < bytes.count else { return nil }
      defer { offset += 1 }
      return bytes[offset]
    }

    mutating func uint16() -> UInt16? {
      guard let high = byte(), let low = byte() else { return nil }
      return UInt16(high) << 8 | UInt16(low)
    }

    mutating func skip(_ count: Int) -> Bool {
      guard count <= bytes.count - offset else { return false }
      offset += count
      return true
    }

    mutating func bytes(_ count: Int) -> UnsafeRawBufferPointer? {
      guard count <= bytes.count - offset else { return nil }
      defer { offset += count }
      return UnsafeRawBufferPointer(rebasing: bytes[offset..<offset + count])
    }

    /// The data of the extension of `type`, from the extensions block that starts here.
    mutating func extensionData(_ type: UInt16) -> UnsafeRawBufferPointer? {
      guard let length = uint16(), let block = bytes(Int(length)) else { return nil }
      var extensions = Reader(block)
      while let found = extensions.uint16(), let size = extensions.uint16(), let data = extensions.bytes(Int(size)) {
        if found == type { return data }
      }
      return nil
    }
  }
}
