/// A Huffman encoder for the tests, over the canonical code rebuilt from RFC 7541 Appendix B's
/// code lengths (independent of the decoder's generated tables).
public enum HuffmanReference {
  public static let lengths: [Int] = [
    13, 23, 28, 28, 28, 28, 28, 28, 28, 24, 30, 28, 28, 30, 28, 28, 28, 28, 28, 28, 28, 28, 30, 28, 28, 28, 28, 28, 28,
    28, 28, 28, 6, 10, 10, 12, 13, 6, 8, 11, 10, 10, 8, 11, 8, 6, 6, 6, 5, 5, 5, 6, 6, 6, 6, 6, 6, 6, 7, 8, 15, 6, 12,
    10, 13, 6, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 8, 7, 8, 13, 19, 13, 14, 6, 15, 5, 6,
    5, 6, 5, 6, 6, 6, 5, 7, 7, 6, 6, 6, 5, 6, 7, 6, 5, 5, 6, 7, 7, 7, 7, 7, 15, 11, 14, 13, 28, 20, 22, 20, 20, 22, 22,
    22, 23, 22, 23, 23, 23, 23, 23, 24, 23, 24, 24, 22, 23, 24, 23, 23, 23, 23, 21, 22, 23, 22, 23, 23, 24, 22, 21, 20,
    22, 22, 23, 23, 21, 23, 22, 22, 24, 21, 22, 23, 23, 21, 21, 22, 21, 23, 22, 23, 23, 20, 22, 22, 22, 23, 22, 22, 23,
    26, 26, 20, 19, 22, 23, 22, 25, 26, 26, 26, 27, 27, 26, 24, 25, 19, 21, 26, 27, 27, 26, 27, 24, 21, 21, 26, 26, 28,
    27, 27, 27, 20, 24, 20, 21, 22, 21, 21, 23, 22, 22, 25, 25, 24, 24, 26, 23, 26, 27, 26, 26, 27, 27, 27, 27, 27, 28,
    27, 27, 27, 27, 27, 26, 30,
  ]
  public static let codes: [UInt32] = {
    var codes = [UInt32](repeating: 0, count: 257)
    var code: UInt32 = 0
    var previous = 0
    var first = true
    for length in 1...30 {
      for symbol in 0..<257 where lengths[symbol] == length {
        if !first { code = (code + 1) << UInt32(length - previous) }
        first = false
        previous = length
        codes[symbol] = code
      }
    }
    return codes
  }()

  public static func encode(_ bytes: [UInt8]) -> [UInt8] {
    var out: [UInt8] = []
    var accumulator: UInt64 = 0
    var bits = 0
    for byte in bytes {
      accumulator = accumulator << UInt64(lengths[Int(byte)]) | UInt64(codes[Int(byte)])
      bits += lengths[Int(byte)]
      while bits >= 8 {
        bits -= 8
        out.append(UInt8(truncatingIfNeeded: accumulator >> UInt64(bits)))
      }
    }
    if bits > 0 { out.append(UInt8(truncatingIfNeeded: accumulator << UInt64(8 - bits)) | UInt8(0xff >> bits)) }
    return out
  }
}
