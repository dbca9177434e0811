/// Text of bounded length kept inline in POD state (host names, TLS versions): what the hooks
/// copy from C strings without allocating. Turned into a `String` only on the recorder thread.
struct FixedText<let capacity: Int>: BitwiseCopyable {
  private var bytes = InlineArray<capacity, UInt8>(repeating: 0)
  private(set) var count = 0

  init() {}

  /// Copies up to `capacity` bytes of a NUL-terminated C string.
  init(cString: UnsafePointer<CChar>?) {
    guard let cString else { return }
    var index = 0
    while index < capacity, cString[index] != 0 {
      bytes[index] = UInt8(bitPattern: cString[index])
      index += 1
    }
    count = index
  }

  /// Copies up to `capacity` of `text`'s bytes.
  init(_ text: UnsafeRawBufferPointer) {
    count = min(text.count, capacity)
    for index in 0..<count { bytes[index] = text[index] }
  }

  /// Copies up to `capacity` of a static text's bytes.
  init(text: StaticString) {
    self.init(UnsafeRawBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
  }

  var isEmpty: Bool { count == 0 }

  /// Empties the text without writing its bytes (only the first `count` are ever read): a stream
  /// slot emptied for each new stream touches no more memory than it uses.
  mutating func removeAll() { count = 0 }

  /// The text, decoded as UTF-8 with replacement of invalid bytes. Allocates: recorder thread only.
  var string: String {
    var copy = bytes
    return withUnsafeBytes(of: &copy) { raw in
      String(decoding: UnsafeRawBufferPointer(rebasing: raw[0..<count]), as: UTF8.self)
    }
  }
}
