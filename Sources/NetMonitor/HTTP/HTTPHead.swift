/// The framing-relevant part of a request or response head, as plain data: the request line or status
/// line, and the only headers a monitor needs (`Host`, `Content-Length`, `Transfer-Encoding`,
/// `Connection`). No other header and no body is ever recorded.
///
/// All zero bytes is an empty head. Text is captured as bytes in inline storage, truncated at its
/// capacity; ``methodString``, ``targetString`` and ``hostString`` turn it into `String` off the hot
/// path.
public struct HTTPHead: Sendable {
  /// The longest method in bytes; longer methods make the parser give up.
  public static var methodCapacity: Int { 16 }
  /// The longest request target kept, in bytes; longer targets are truncated (``targetTruncated``).
  public static var targetCapacity: Int { 512 }
  /// The longest `Host` value kept, in bytes; longer values are truncated (``hostTruncated``).
  public static var hostCapacity: Int { 256 }
  /// Capacity of ``text``: the three texts at their capacities (`RecordLayoutTests` checks that
  /// the array is this size).
  public static var textCapacity: Int { methodCapacity + targetCapacity + hostCapacity }

  // Layout: widest fields first and the byte arrays last, so the struct has no interior padding and
  // zero bytes compare equal to `init()`.

  /// The `Content-Length` value when ``hasContentLength``; 0 otherwise.
  public internal(set) var contentLengthValue: UInt64
  /// The status code of a response (100…999); 0 for a request.
  public internal(set) var status: UInt16
  /// Bytes of the request target in ``text``.
  public internal(set) var targetLength: UInt16
  /// Bytes of the `Host` value in ``text``.
  public internal(set) var hostLength: UInt16
  /// Bytes of the method in ``text``; 0 for a response.
  public internal(set) var methodLength: UInt8
  /// The minor HTTP version: 0 for HTTP/1.0, 1 for HTTP/1.1 (higher minor digits as sent).
  public internal(set) var minorVersion: UInt8
  /// The request target was longer than ``targetCapacity``; ``text`` holds its first bytes.
  public internal(set) var targetTruncated: Bool
  /// The `Host` value was longer than ``hostCapacity``; ``text`` holds its first bytes.
  public internal(set) var hostTruncated: Bool
  /// A `Content-Length` header was present (all its values agreed, or the parser gave up).
  public internal(set) var hasContentLength: Bool
  /// A `Transfer-Encoding` header was present.
  public internal(set) var hasTransferEncoding: Bool
  /// The last transfer coding is `chunked`.
  public internal(set) var isChunked: Bool
  /// `Connection` lists `close`.
  public internal(set) var connectionClose: Bool
  /// `Connection` lists `keep-alive`.
  public internal(set) var connectionKeepAlive: Bool
  /// `Connection` lists `upgrade` (a request asking to switch protocols, or a 101 response).
  public internal(set) var connectionUpgrade: Bool
  /// How the body of this message is delimited; set when the head is complete.
  public internal(set) var bodyFraming: HTTPBodyFraming
  /// For a response: the kind of the request it answers, as reported with
  /// ``HTTPStreamParser/expectResponse(to:)`` (``HTTPRequestKind/ordinary`` when none was reported).
  public internal(set) var answeredRequestKind: HTTPRequestKind
  /// The head's text, packed: the method's bytes (``methodLength``, `GET`, `POST`…), then the request
  /// target's (``targetLength``: path and query, or an absolute URI, or `*`, or `host:port` for
  /// `CONNECT`), then the `Host` header value's without surrounding whitespace (``hostLength``; the
  /// first `Host` header wins), each right after the one before and up to its own capacity: a
  /// request's head has them in this order. Packed, a short request's text lies in the cache line
  /// of the scalars, and the readable part of a head is one run of bytes. The target is not
  /// redacted: the recorder redacts secrets.
  public internal(set) var text: InlineArray<784, UInt8>

  /// An empty head; equal to all zero bytes.
  public init() {
    contentLengthValue = 0
    status = 0
    targetLength = 0
    hostLength = 0
    methodLength = 0
    minorVersion = 0
    targetTruncated = false
    hostTruncated = false
    hasContentLength = false
    hasTransferEncoding = false
    isChunked = false
    connectionClose = false
    connectionKeepAlive = false
    connectionUpgrade = false
    bodyFraming = .none
    answeredRequestKind = .ordinary
    text = InlineArray(repeating: 0)
  }

  /// Empties the head without rewriting its text (bytes past the lengths are never read).
  @inline(__always)
  mutating func clearScalars() {
    contentLengthValue = 0
    status = 0
    targetLength = 0
    hostLength = 0
    methodLength = 0
    minorVersion = 0
    targetTruncated = false
    hostTruncated = false
    hasContentLength = false
    hasTransferEncoding = false
    isChunked = false
    connectionClose = false
    connectionKeepAlive = false
    connectionUpgrade = false
    bodyFraming = .none
    answeredRequestKind = .ordinary
  }

  /// Copies the head at `source` to `destination` as far as it is ever read: the scalars and the
  /// valid bytes of its text (bytes past them are never read). `destination` may hold anything: the
  /// type is plain data. What the hooks use instead of an assignment, which copies all ~800 bytes.
  @inline(__always)
  static func copyReadableBytes(from source: UnsafePointer<HTTPHead>, to destination: UnsafeMutablePointer<HTTPHead>) {
    let scalars = UnsafeRawPointer(source.pointer(to: \.text)!) - UnsafeRawPointer(source)
    UnsafeMutableRawPointer(destination).copyMemory(from: source, byteCount: scalars &+ source.textLength)
  }

  /// Appends `byte` to the method; the caller checked that it fits (``methodCapacity``).
  @inline(__always)
  mutating func appendMethodByte(_ byte: UInt8) {
    text[Int(methodLength)] = byte
    methodLength &+= 1
  }

  /// Appends `bytes` to the method (before any target or `Host` byte), up to its capacity.
  @inline(__always)
  mutating func appendMethod(_ bytes: UnsafeRawBufferPointer) {
    let copied = Self.copy(bytes, into: &text, at: Int(methodLength), room: Self.methodCapacity &- Int(methodLength))
    methodLength &+= UInt8(truncatingIfNeeded: copied)
  }

  /// Appends `byte` to the target, or marks it truncated when it is full.
  @inline(__always)
  mutating func appendTargetByte(_ byte: UInt8) {
    guard Int(targetLength) < Self.targetCapacity else { return targetTruncated = true }
    text[Int(methodLength) &+ Int(targetLength)] = byte
    targetLength &+= 1
  }

  /// Appends `bytes` to the target, up to its capacity (then it is marked truncated).
  @inline(__always)
  mutating func appendTarget(_ bytes: UnsafeRawBufferPointer) {
    let copied = Self.copy(
      bytes, into: &text, at: Int(methodLength) &+ Int(targetLength), room: Self.targetCapacity &- Int(targetLength))
    targetLength &+= UInt16(truncatingIfNeeded: copied)
    if copied < bytes.count { targetTruncated = true }
  }

  /// Appends `bytes` to the `Host` value, up to its capacity (then it is marked truncated). Returns
  /// how many were appended.
  @inline(__always)
  mutating func appendHost(_ bytes: UnsafeRawBufferPointer) -> Int {
    let copied = Self.copy(
      bytes, into: &text, at: Int(methodLength) &+ Int(targetLength) &+ Int(hostLength),
      room: Self.hostCapacity &- Int(hostLength))
    hostLength &+= UInt16(truncatingIfNeeded: copied)
    if copied < bytes.count { hostTruncated = true }
    return copied
  }

  @inline(__always)
  private static func copy(
    _ bytes: UnsafeRawBufferPointer, into text: inout InlineArray<784, UInt8>, at offset: Int, room: Int
  ) -> Int {
    let copied = min(bytes.count, room)
    withUnsafeMutableBytes(of: &text) { storage in
      UnsafeMutableRawBufferPointer(rebasing: storage[offset...])
        .copyMemory(from: UnsafeRawBufferPointer(rebasing: bytes[..<copied]))
    }
    return copied
  }

  /// Whether this is a request head (it has a method) rather than a response head.
  public var isRequest: Bool { methodLength > 0 }

  /// The `Content-Length` value, or `nil` without that header.
  public var contentLength: UInt64? { hasContentLength ? contentLengthValue : nil }

  /// Whether the sender intends to keep the connection open after this message: HTTP/1.1 unless
  /// `Connection: close`, HTTP/1.0 only with `Connection: keep-alive`.
  public var keepAlive: Bool {
    if connectionClose { return false }
    return minorVersion >= 1 || connectionKeepAlive
  }

  /// Whether the method is `HEAD`.
  public var isHEAD: Bool { requestKind == .head }

  /// The kind of this request, to pass to the response parser with
  /// ``HTTPStreamParser/expectResponse(to:)``. Methods are case-sensitive (RFC 9110 §9.1).
  @inline(__always)
  public var requestKind: HTTPRequestKind {
    if methodLength == 4, text[0] == 0x48, text[1] == 0x45, text[2] == 0x41, text[3] == 0x44 {
      return .head  // "HEAD"
    }
    if methodLength == 7, text[0] == 0x43, text[1] == 0x4F, text[2] == 0x4E, text[3] == 0x4E,
      text[4] == 0x45, text[5] == 0x43, text[6] == 0x54
    {
      return .connect  // "CONNECT"
    }
    return .ordinary
  }
}
