/// The framing-relevant part of a request or response head, as plain data: the request line or status
/// line, and the only headers a monitor needs (`Host`, `Content-Length`, `Transfer-Encoding`,
/// `Connection`). No other header and no body is ever recorded.
///
/// All zero bytes is an empty head. Text is captured as bytes in inline storage, truncated at its
/// capacity; ``methodString``, ``targetString`` and ``hostString`` turn it into `String` off the hot
/// path.
public struct HTTPHead: Sendable {
  /// Capacity of ``method`` in bytes; longer methods make the parser give up.
  public static var methodCapacity: Int { 16 }
  /// Capacity of ``target`` in bytes; longer targets are truncated (``targetTruncated``).
  public static var targetCapacity: Int { 512 }
  /// Capacity of ``host`` in bytes; longer values are truncated (``hostTruncated``).
  public static var hostCapacity: Int { 256 }

  // Layout: widest fields first and the byte arrays last, so the struct has no interior padding and
  // zero bytes compare equal to `init()`.

  /// The `Content-Length` value when ``hasContentLength``; 0 otherwise.
  public internal(set) var contentLengthValue: UInt64
  /// The status code of a response (100…999); 0 for a request.
  public internal(set) var status: UInt16
  /// Number of valid bytes in ``target``.
  public internal(set) var targetLength: UInt16
  /// Number of valid bytes in ``host``.
  public internal(set) var hostLength: UInt16
  /// Number of valid bytes in ``method``; 0 for a response.
  public internal(set) var methodLength: UInt8
  /// The minor HTTP version: 0 for HTTP/1.0, 1 for HTTP/1.1 (higher minor digits as sent).
  public internal(set) var minorVersion: UInt8
  /// The request target was longer than ``targetCapacity``; ``target`` holds its first bytes.
  public internal(set) var targetTruncated: Bool
  /// The `Host` value was longer than ``hostCapacity``; ``host`` holds its first bytes.
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
  /// The request method's bytes (`GET`, `POST`…); the first ``methodLength`` are valid.
  public internal(set) var method: InlineArray<16, UInt8>
  /// The request target's bytes (path and query, or an absolute URI, or `*`, or `host:port` for
  /// `CONNECT`); the first ``targetLength`` are valid. Not redacted: the recorder redacts secrets.
  public internal(set) var target: InlineArray<512, UInt8>
  /// The `Host` header value's bytes without surrounding whitespace; the first ``hostLength`` are valid.
  /// The first `Host` header wins.
  public internal(set) var host: InlineArray<256, UInt8>

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
    method = InlineArray(repeating: 0)
    target = InlineArray(repeating: 0)
    host = InlineArray(repeating: 0)
  }

  /// Empties the head without rewriting its text arrays (their bytes past the lengths are never read).
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

  /// Copies the head at `source` to `destination` as far as it is ever read: the scalars and the valid
  /// bytes of each text (bytes past a text's length are never read). `destination` may hold anything:
  /// the type is plain data. What the hooks use instead of an assignment, which copies all ~800 bytes.
  @inline(__always)
  static func copyReadableBytes(from source: UnsafePointer<HTTPHead>, to destination: UnsafeMutablePointer<HTTPHead>) {
    let scalars = UnsafeRawPointer(source.pointer(to: \.method)!) - UnsafeRawPointer(source)
    UnsafeMutableRawPointer(destination).copyMemory(from: source, byteCount: scalars)
    UnsafeMutableRawPointer(destination.pointer(to: \.method)!).copyMemory(
      from: source.pointer(to: \.method)!, byteCount: min(Int(source.pointee.methodLength), methodCapacity))
    UnsafeMutableRawPointer(destination.pointer(to: \.target)!).copyMemory(
      from: source.pointer(to: \.target)!, byteCount: min(Int(source.pointee.targetLength), targetCapacity))
    UnsafeMutableRawPointer(destination.pointer(to: \.host)!).copyMemory(
      from: source.pointer(to: \.host)!, byteCount: min(Int(source.pointee.hostLength), hostCapacity))
  }

  /// Appends `bytes` to a text of which `length` bytes are valid, up to its capacity; sets `truncated`
  /// when some did not fit. Returns how many were appended.
  @inline(__always)
  static func append<let capacity: Int>(
    _ bytes: UnsafeRawBufferPointer, to text: inout InlineArray<capacity, UInt8>, length: inout UInt16,
    truncated: inout Bool
  ) -> Int {
    let start = Int(length)
    let copied = min(bytes.count, capacity &- start)
    withUnsafeMutableBytes(of: &text) { storage in
      UnsafeMutableRawBufferPointer(rebasing: storage[start...])
        .copyMemory(from: UnsafeRawBufferPointer(rebasing: bytes[..<copied]))
    }
    length &+= UInt16(truncatingIfNeeded: copied)
    if copied < bytes.count { truncated = true }
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
    if methodLength == 4, method[0] == 0x48, method[1] == 0x45, method[2] == 0x41, method[3] == 0x44 {
      return .head  // "HEAD"
    }
    if methodLength == 7, method[0] == 0x43, method[1] == 0x4F, method[2] == 0x4E, method[3] == 0x4E,
      method[4] == 0x45, method[5] == 0x43, method[6] == 0x54
    {
      return .connect  // "CONNECT"
    }
    return .ordinary
  }
}
