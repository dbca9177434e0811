import Glibc
import Testing

@testable import NetMonitor

/// Records spell a peer's address as `inet_ntop` does; IPv4 is formatted by hand (without
/// `sprintf`), so it is checked against `inet_ntop` itself.
@Suite("Peer address text")
struct PeerAddressTextTests {
  @Test("IPv4 text is inet_ntop's, for every width of every octet")
  func ipv4() {
    let octets: [UInt8] = [0, 1, 9, 10, 42, 99, 100, 109, 127, 200, 255]
    var count = 0
    for a in octets {
      for b in octets {
        for c in [UInt8(0), 10, 255] {
          for d in octets {
            let bytes = [a, b, c, d]
            #expect(Self.peer(ipv4: bytes).text == Self.inetNtop(AF_INET, bytes))
            count += 1
          }
        }
      }
    }
    #expect(count == 3993)
    #expect(Self.peer(ipv4: [127, 0, 0, 1]).text == "127.0.0.1")
  }

  @Test("IPv6 text is inet_ntop's; other families have none")
  func ipv6AndOthers() {
    for bytes: [UInt8] in [
      Array(repeating: 0, count: 15) + [1],
      [0x20, 0x01, 0x0d, 0xb8] + Array(repeating: 0, count: 10) + [0xff, 0x01],
      Array(repeating: 0, count: 10) + [0xff, 0xff, 192, 168, 1, 20],
    ] {
      var address = sockaddr_in6()
      address.sin6_family = sa_family_t(AF_INET6)
      withUnsafeMutableBytes(of: &address.sin6_addr) { $0.copyBytes(from: bytes) }
      let peer = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
          PeerAddress($0, length: socklen_t(MemoryLayout<sockaddr_in6>.size))
        }
      }
      #expect(peer.text == Self.inetNtop(AF_INET6, bytes))
    }
    #expect(PeerAddress().text == nil)
  }

  private static func peer(ipv4 bytes: [UInt8]) -> PeerAddress {
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = UInt16(8080).bigEndian
    withUnsafeMutableBytes(of: &address.sin_addr) { $0.copyBytes(from: bytes) }
    return withUnsafePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        PeerAddress($0, length: socklen_t(MemoryLayout<sockaddr_in>.size))
      }
    }
  }

  private static func inetNtop(_ family: Int32, _ bytes: [UInt8]) -> String? {
    var output = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
    let converted = bytes.withUnsafeBytes { inet_ntop(family, $0.baseAddress, &output, socklen_t(output.count)) }
    guard converted != nil else { return nil }
    return String(decoding: output.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
  }
}
