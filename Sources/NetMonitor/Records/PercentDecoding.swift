/// `%XX` escapes undone: what a URL's query parameters (form-encoded, `+` a space) and a gRPC
/// call's `grpc-message` (gRPC's PROTOCOL-HTTP2: every byte outside printable ASCII, and `%`) both
/// carry. A `%` not followed by two hex digits stays as it is.
enum PercentDecoding {
  /// `text` decoded (`plusIsSpace`: `+` read as a space, as `application/x-www-form-urlencoded`
  /// has it), written at the start of `buffer` (at least `text.count` bytes).
  @inline(__always)
  static func decode(
    _ text: Slice<UnsafeRawBufferPointer>, plusIsSpace: Bool, into buffer: UnsafeMutableBufferPointer<UInt8>
  ) -> UnsafeBufferPointer<UInt8> {
    var count = 0
    var index = text.startIndex
    while index < text.endIndex {
      let byte = text[index]
      if byte == UInt8(ascii: "%"), index + 2 < text.endIndex, let high = hexValue(text[index + 1]),
        let low = hexValue(text[index + 2])
      {
        buffer[count] = high << 4 | low
        index += 3
      } else {
        buffer[count] = plusIsSpace && byte == UInt8(ascii: "+") ? UInt8(ascii: " ") : byte
        index += 1
      }
      count += 1
    }
    return UnsafeBufferPointer(rebasing: buffer[..<count])
  }

  /// `text` decoded as a string (`+` kept); bytes that are no UTF-8 read as U+FFFD.
  static func decoded(_ text: String) -> String {
    guard text.utf8.contains(UInt8(ascii: "%")) else { return text }
    var text = text
    return text.withUTF8 { utf8 in
      withUnsafeTemporaryAllocation(of: UInt8.self, capacity: utf8.count) { buffer in
        String(decoding: decode(UnsafeRawBufferPointer(utf8)[...], plusIsSpace: false, into: buffer), as: UTF8.self)
      }
    }
  }

  private static func hexValue(_ byte: UInt8) -> UInt8? {
    switch byte {
    case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
    case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
    case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
    default: nil
    }
  }
}
