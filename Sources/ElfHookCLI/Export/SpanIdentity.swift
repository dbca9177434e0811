import Foundation

/// Deterministic trace and span ids: a hash of what identifies a record — its process id, its
/// connection id, its start time and its position in its file (the byte offset of its line, or
/// its ring slot's position) — so that a batch sent again after a crash carries the same ids, and
/// a receiver can tell a resend from a new span (exactly-once is checkable there).
///
/// The hash is FNV-1a (64-bit) over the fields' little-endian bytes and a purpose label, finished
/// with SplitMix64's mixer; a trace id is two such hashes with different labels. Not
/// cryptographic: ids need to be unique and stable, not secret. An all-zero id (invalid in OTLP)
/// becomes 1.
struct SpanIdentity: Hashable, Sendable {
  /// The fields hashed, in order.
  let fields: [UInt64]

  /// The identity of the record at `position` (see the type's summary) in its source.
  init(pid: Int32, connectionId: UInt64, startUnixNs: UInt64, position: UInt64) {
    fields = [UInt64(UInt32(bitPattern: pid)), connectionId, startUnixNs, position]
  }

  /// The 16-byte trace id the record's spans share.
  var traceId: Data {
    var bytes = Data()
    withUnsafeBytes(of: hash("trace.high").littleEndian) { bytes.append(contentsOf: $0) }
    withUnsafeBytes(of: hash("trace.low").littleEndian) { bytes.append(contentsOf: $0) }
    if bytes.allSatisfy({ $0 == 0 }) { bytes[15] = 1 }
    return bytes
  }

  /// The 8-byte id of the record's span named by `label` (`"request"`, `"dns"`, `"connect"`…).
  func spanId(_ label: String) -> Data {
    var value = hash("span." + label)
    if value == 0 { value = 1 }
    return withUnsafeBytes(of: value.littleEndian) { Data($0) }
  }

  private func hash(_ label: String) -> UInt64 {
    var state: UInt64 = 0xcbf2_9ce4_8422_2325
    func mix(_ byte: UInt8) {
      state ^= UInt64(byte)
      state = state &* 0x100_0000_01b3
    }
    for field in fields {
      withUnsafeBytes(of: field.littleEndian) { $0.forEach(mix) }
    }
    label.utf8.forEach(mix)
    // SplitMix64's finalizer: spreads FNV's weak low bits over the whole word.
    var z = state
    z = (z ^ (z >> 30)) &* 0xbf58_476d_1ce4_e5b9
    z = (z ^ (z >> 27)) &* 0x94d0_49bb_1331_11eb
    return z ^ (z >> 31)
  }
}
