import Glibc

/// The request of an http record as its slot holds it — scheme, method, `Host` and target bytes,
/// before any decoding or redaction — kept to recognise the next record that repeats it without
/// decoding that one. Equal bytes decode to equal ``HTTPRecord`` fields (`scheme`, `method`,
/// `host`, redacted `target`): decoding and redaction are functions of the bytes. The converse does
/// not hold (invalid UTF-8 decodes to the same replacement characters), so a record that does not
/// match may still repeat the request: a consumer then decodes it, as it would have anyway.
public struct HTTPRequestBytes {
  private var isTLS: UInt8 = 0
  /// -1 until a request is captured: then no record matches.
  private var methodLength = -1
  private var hostLength = -1
  private var targetLength = -1
  /// The method's, the target's and the `Host`'s bytes, one after the other. Its storage is kept
  /// from one request to the next.
  private var text: [UInt8] = []

  /// Bytes that no record matches.
  public init() {}

  /// Takes the request of `http`, which the next records are compared with.
  public mutating func capture(_ http: HTTPRecordView) {
    let request = http.record.pointer(to: \.httpRequest)!
    let method = request.methodBytes
    let target = request.targetBytes
    let host = request.hostBytes
    isTLS = http.record.pointee.core.isTLS
    methodLength = method.count
    targetLength = target.count
    hostLength = host.count
    text.removeAll(keepingCapacity: true)
    text.append(contentsOf: method)
    text.append(contentsOf: target)
    text.append(contentsOf: host)
  }

  /// Whether `http`'s request has exactly the bytes captured last: then it decodes to the same
  /// scheme, method, `Host` and target. The lengths are compared first, then the target (where
  /// requests mostly differ), the `Host` and the method.
  public func matches(_ http: HTTPRecordView) -> Bool {
    let request = http.record.pointer(to: \.httpRequest)!
    let method = request.methodBytes
    let target = request.targetBytes
    let host = request.hostBytes
    guard
      target.count == targetLength && host.count == hostLength && method.count == methodLength
        && http.record.pointee.core.isTLS == isTLS
    else { return false }
    return text.withUnsafeBytes { text in
      guard let captured = text.baseAddress else { return true }  // all three empty
      return Self.equal(target, captured + methodLength) && Self.equal(host, captured + methodLength + targetLength)
        && Self.equal(method, captured)
    }
  }

  private static func equal(_ bytes: UnsafeRawBufferPointer, _ captured: UnsafeRawPointer) -> Bool {
    bytes.isEmpty || memcmp(bytes.baseAddress!, captured, bytes.count) == 0
  }
}
