import Glibc
import Testing

@testable import NetMonitor

/// A ring's consumer reuses the last record's strings when the bytes repeat: it must never hand
/// back a string for other bytes.
@Suite("Record text cache")
struct RecordTextCacheTests {
  @Test("texts: same bytes reuse, other bytes of the same length or longer than the inline capacity decode")
  func texts() {
    var cache = RecordTextCache()
    let long = "/" + String(repeating: "x", count: 40)
    for (text, expected) in [
      ("/a", "/a"), ("/a", "/a"), ("/b", "/b"), ("", ""), ("/a", "/a"), (long, long), (long + "y", long + "y"),
      ("/ab", "/ab"), ("/ac", "/ac"),
    ] {
      let decoded = Array(text.utf8).withUnsafeBytes { cache.redactedTarget($0) }
      #expect(decoded == expected)
    }
    let method = Array("GET".utf8).withUnsafeBytes { cache.method($0) }
    let host = Array("example.com".utf8).withUnsafeBytes { cache.host($0) }
    #expect(method == "GET" && host == "example.com")
    let invalid = [UInt8]([0x2F, 0xFF]).withUnsafeBytes { cache.redactedTarget($0) }
    #expect(invalid == "/\u{FFFD}")
  }

  @Test("targets come out redacted when new, when repeated and when longer than the inline capacity")
  func redactedTargets() {
    var cache = RecordTextCache()
    let long = "/a/path/of/more/than/thirty/two/bytes?api_key=abc"
    for target in ["/x?token=1", "/x?token=1", "/y", "/x?token=1", long, long, "/y", "/y?password=p"] {
      let decoded = Array(target.utf8).withUnsafeBytes { cache.redactedTarget($0) }
      #expect(decoded == TargetRedaction.redact(target))
    }
    #expect(Array("/x?token=1".utf8).withUnsafeBytes { cache.redactedTarget($0) } == "/x?token=REDACTED")
  }

  @Test("IPv6 peer text: an address differing in any of its 16 bytes is another")
  func ipv6Peers() {
    var cache = RecordTextCache()
    var bytes = [UInt8](repeating: 0, count: 16)
    bytes[15] = 1
    #expect(cache.peerText(Self.peer6(bytes, port: 1)) == "::1")
    #expect(cache.peerText(Self.peer6(bytes, port: 2)) == "::1")
    for index in [0, 7, 8, 15] {
      var other = bytes
      other[index] ^= 0x20
      let expected = other.withUnsafeBytes { raw in
        withUnsafeTemporaryAllocation(of: CChar.self, capacity: Int(INET6_ADDRSTRLEN)) { text in
          String(cString: inet_ntop(AF_INET6, raw.baseAddress, text.baseAddress, socklen_t(text.count))!)
        }
      }
      #expect(cache.peerText(Self.peer6(other, port: 1)) == expected)
      #expect(cache.peerText(Self.peer6(bytes, port: 1)) == "::1")
    }
  }

  @Test("peer text: the same address on another port reuses it; another address does not")
  func peers() {
    var cache = RecordTextCache()
    #expect(cache.peerText(Self.peer([127, 0, 0, 1], port: 1000)) == "127.0.0.1")
    #expect(cache.peerText(Self.peer([127, 0, 0, 1], port: 2000)) == "127.0.0.1")
    #expect(cache.peerText(Self.peer([10, 0, 0, 1], port: 2000)) == "10.0.0.1")
    #expect(cache.peerText(PeerAddress()) == nil)
    #expect(cache.peerText(Self.peer([10, 0, 0, 1], port: 2000)) == "10.0.0.1")
  }

  private static func peer6(_ bytes: [UInt8], port: UInt16) -> PeerAddress {
    var address = sockaddr_in6()
    address.sin6_family = sa_family_t(AF_INET6)
    address.sin6_port = port.bigEndian
    withUnsafeMutableBytes(of: &address.sin6_addr) { $0.copyBytes(from: bytes) }
    return withUnsafePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        PeerAddress($0, length: socklen_t(MemoryLayout<sockaddr_in6>.size))
      }
    }
  }

  private static func peer(_ bytes: [UInt8], port: UInt16) -> PeerAddress {
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = port.bigEndian
    withUnsafeMutableBytes(of: &address.sin_addr) { $0.copyBytes(from: bytes) }
    return withUnsafePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        PeerAddress($0, length: socklen_t(MemoryLayout<sockaddr_in>.size))
      }
    }
  }
}
