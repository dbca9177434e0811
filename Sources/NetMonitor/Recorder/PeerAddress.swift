import CNetMonitor
import Glibc

/// A socket peer address kept inline (POD): family, port and the raw address bytes.
struct PeerAddress: BitwiseCopyable {
  /// `AF_INET`, `AF_INET6`, `AF_UNIX`, or 0 when unknown.
  var family: UInt16 = 0
  /// Host byte order.
  var port: UInt16 = 0
  /// 4 bytes for IPv4, 16 for IPv6.
  var bytes = InlineArray<16, UInt8>(repeating: 0)

  init() {}

  /// Reads a `sockaddr_in` / `sockaddr_in6`; anything else keeps only the family
  /// (`cnm_address_read`, which the dns record uses too).
  init(_ address: UnsafePointer<sockaddr>?, length: socklen_t) {
    var read = cnm_address()
    cnm_address_read(address, length, &read)
    self.init(read)
  }

  init(_ address: cnm_address) {
    family = address.family
    port = address.port
    withUnsafeBytes(of: address.bytes) { raw in for index in 0..<16 { bytes[index] = raw[index] } }
  }

  var isInternet: Bool { family == UInt16(AF_INET) || family == UInt16(AF_INET6) }

  /// The address as C reads it (`cnm_address`).
  var cAddress: cnm_address {
    var address = cnm_address()
    address.family = family
    address.port = port
    withUnsafeMutableBytes(of: &address.bytes) { raw in for index in 0..<16 { raw[index] = bytes[index] } }
    return address
  }

  /// Same address, ignoring the port (what a name resolution returns).
  /// Compares the address as words, not byte by byte: a ring's consumer asks once per record.
  func sameHost(as other: PeerAddress) -> Bool {
    guard family == other.family else { return false }
    let isIPv4 = family == UInt16(AF_INET)
    return withUnsafeBytes(of: bytes) { mine in
      withUnsafeBytes(of: other.bytes) { theirs in
        if isIPv4 { return mine.loadUnaligned(as: UInt32.self) == theirs.loadUnaligned(as: UInt32.self) }
        return mine.loadUnaligned(as: UInt64.self) == theirs.loadUnaligned(as: UInt64.self)
          && mine.loadUnaligned(fromByteOffset: 8, as: UInt64.self)
            == theirs.loadUnaligned(fromByteOffset: 8, as: UInt64.self)
      }
    }
  }

  /// "127.0.0.1", "::1", as `inet_ntop` writes them. Recorder thread only.
  var text: String? {
    guard isInternet else { return nil }
    if family == UInt16(AF_INET) { return ipv4Text }
    var copy = bytes
    return withUnsafeTemporaryAllocation(of: CChar.self, capacity: Int(INET6_ADDRSTRLEN)) { output in
      let converted = withUnsafeBytes(of: &copy) { raw in
        inet_ntop(Int32(family), raw.baseAddress, output.baseAddress, socklen_t(output.count))
      }
      guard converted != nil else { return nil }
      return String(cString: output.baseAddress!)
    }
  }

  /// Dotted decimal written by hand: `inet_ntop` formats IPv4 with `sprintf`, which was a third of
  /// what a consumer spent on an http record.
  private var ipv4Text: String {
    withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 16) { output in
      var length = 0
      for index in 0..<4 {
        if index > 0 {
          output[length] = UInt8(ascii: ".")
          length += 1
        }
        let octet = bytes[index]
        if octet >= 100 {
          output[length] = UInt8(ascii: "0") + octet / 100
          length += 1
        }
        if octet >= 10 {
          output[length] = UInt8(ascii: "0") + octet / 10 % 10
          length += 1
        }
        output[length] = UInt8(ascii: "0") + octet % 10
        length += 1
      }
      return String(decoding: UnsafeBufferPointer(rebasing: output[..<length]), as: UTF8.self)
    }
  }
}
