import Glibc

/// The text of the last record a consumer decoded: a server's records repeat their method, target,
/// `Host` and peer address, and the next record with the same bytes reuses the strings instead of
/// decoding, validating (and for the peer, formatting) them again. One per record stream (a ring).
struct RecordTextCache {
  private var method = Entry()
  private var target = Entry()
  private var host = Entry()
  private var peer = PeerAddress()
  private var peerText: String?

  init() {}

  mutating func method(_ bytes: UnsafeRawBufferPointer) -> String { method.string(for: bytes) }
  /// The target redacted (`TargetRedaction.redact(_:)`): a repeated target is redacted once.
  mutating func redactedTarget(_ bytes: UnsafeRawBufferPointer) -> String {
    target.string(for: bytes) { TargetRedaction.redact($0) }
  }
  mutating func host(_ bytes: UnsafeRawBufferPointer) -> String { host.string(for: bytes) }

  /// `address.text`, or the text of the same address (family and bytes) last time.
  mutating func peerText(_ address: PeerAddress) -> String? {
    if address.isInternet, address.sameHost(as: peer) { return peerText }
    peer = address
    peerText = address.text
    return peerText
  }

  /// One text field: its last bytes (when short: kept inline, nothing allocated) and their string.
  private struct Entry {
    static let capacity = 32
    var bytes = InlineArray<32, UInt8>(repeating: 0)
    var count = -1
    var string = ""

    /// The string of `text`, made with `decode` when the bytes are new.
    mutating func string(
      for text: UnsafeRawBufferPointer,
      decode: (UnsafeRawBufferPointer) -> String = { String(decoding: $0, as: UTF8.self) }
    ) -> String {
      guard text.count <= Self.capacity else { return decode(text) }
      let same =
        count == text.count
        && (text.isEmpty || withUnsafeBytes(of: &bytes) { memcmp($0.baseAddress!, text.baseAddress!, text.count) == 0 })
      if same { return string }
      withUnsafeMutableBytes(of: &bytes) { $0.copyMemory(from: text) }
      count = text.count
      string = decode(text)
      return string
    }
  }
}
