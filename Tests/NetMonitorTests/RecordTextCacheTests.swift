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
      let decoded = Array(text.utf8).withUnsafeBytes { cache.target($0) }
      #expect(decoded == expected)
    }
    let method = Array("GET".utf8).withUnsafeBytes { cache.method($0) }
    let host = Array("example.com".utf8).withUnsafeBytes { cache.host($0) }
    #expect(method == "GET" && host == "example.com")
    let invalid = [UInt8]([0x2F, 0xFF]).withUnsafeBytes { cache.target($0) }
    #expect(invalid == "/\u{FFFD}")
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
