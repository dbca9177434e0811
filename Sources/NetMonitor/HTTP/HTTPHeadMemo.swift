import Glibc

/// The bytes of the last head a parser took whole from one buffer, so that a next head of the very
/// same bytes is compared instead of parsed: the parser's ``HTTPHead`` still holds what those bytes
/// parse to, and parsing is a function of the bytes alone. A server answers a keep-alive client with
/// heads that differ in `Date` once a second; a load generator, a health check or a polling client
/// sends the same request again and again. For them a head costs one `memcmp` (callgrind: nginx's
/// 240-byte response head, ~2,400 instructions parsed, ~60 compared).
///
/// Plain data; all zero bytes is "nothing remembered". Longer heads are not remembered.
struct HTTPHeadMemo {
  /// The longest head remembered, in bytes.
  static var capacity: Int { 510 }

  /// Bytes of the remembered head; 0 when there is none.
  private(set) var length: UInt16
  private var bytes: InlineArray<510, UInt8>

  init() {
    length = 0
    bytes = InlineArray(repeating: 0)
  }

  /// Remembers the `count` bytes at `head` (a whole head, start line to blank line), or forgets when
  /// they do not fit.
  @inline(__always)
  mutating func remember(_ head: UnsafeRawPointer, count: Int) {
    guard count <= Self.capacity else { return forget() }
    withUnsafeMutableBytes(of: &bytes) { $0.baseAddress!.copyMemory(from: head, byteCount: count) }
    length = UInt16(truncatingIfNeeded: count)
  }

  /// Forgets the remembered head: the parser's ``HTTPHead`` is about to hold another.
  @inline(__always)
  mutating func forget() { length = 0 }

  /// The length of the remembered head when the `available` bytes at `start` begin with it.
  /// (`mutating` only to compare the bytes in place.)
  @inline(__always)
  mutating func match(_ start: UnsafeRawPointer, available: Int) -> Int? {
    let length = Int(self.length)
    guard length > 0, length <= available else { return nil }
    let same = withUnsafeBytes(of: &bytes) { memcmp($0.baseAddress!, start, length) == 0 }
    return same ? length : nil
  }
}
