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
  private var secretNames = SecretNameMemo()

  init() {}

  mutating func method(_ bytes: UnsafeRawBufferPointer) -> String { method.string(for: bytes) }
  /// The target redacted (`TargetRedaction.redact(_:)`): a repeated target is redacted once.
  /// A new one is redacted with the verdicts on its parameter names kept from the last targets.
  mutating func redactedTarget(_ bytes: UnsafeRawBufferPointer) -> String {
    if let known = target.string(ifSame: bytes) { return known }
    let redacted = TargetRedaction.redact(bytes, names: &secretNames)
    target.remember(bytes, as: redacted)
    return redacted
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

    /// The string of `text`, decoded when the bytes are new.
    mutating func string(for text: UnsafeRawBufferPointer) -> String {
      if let known = string(ifSame: text) { return known }
      let decoded = String(decoding: text, as: UTF8.self)
      remember(text, as: decoded)
      return decoded
    }

    /// The string remembered for `text`, when the last bytes were these.
    mutating func string(ifSame text: UnsafeRawBufferPointer) -> String? {
      guard count == text.count else { return nil }
      let same = text.isEmpty || withUnsafeBytes(of: &bytes) { memcmp($0.baseAddress!, text.baseAddress!, text.count) == 0 }
      return same ? string : nil
    }

    /// Remembers `string` as the text of `text`'s bytes (when they are short enough to keep).
    mutating func remember(_ text: UnsafeRawBufferPointer, as string: String) {
      guard text.count <= Self.capacity else {
        count = -1
        return
      }
      withUnsafeMutableBytes(of: &bytes) { $0.copyMemory(from: text) }
      count = text.count
      self.string = string
    }
  }
}
