import CNetMonitor
import Glibc

/// A completed connection or http record as the hooks hand it on: POD, copied into a slot of the
/// preallocated queue (`cnm_records`) without allocating. The queue is in-process memory that the
/// recorder thread drains, or a record ring file that another process drains (``RecordRing``);
/// either turns it into a ``Transaction``. dns records are written in C (`cnm_dns_record`,
/// cnm_records.h); every record starts with its kind and the pid.
struct RawRecord {
  /// Written into every record ring's header: the slot size in the low 32 bits, the layout's
  /// version in the high 32 (`CNM_RECORD_LAYOUT_VERSION`: bump it whenever a stored field changes).
  static let layout = UInt64(CNM_RECORD_SLOT_SIZE) | UInt64(CNM_RECORD_LAYOUT_VERSION) << 32
  /// Bytes of a queue or ring slot: any record fits in one.
  static let slotSize = Int(CNM_RECORD_SLOT_SIZE)

  enum Kind {
    static let dns = UInt8(CNM_RECORD_DNS)
    static let connection = UInt8(CNM_RECORD_CONNECTION)
    static let http = UInt8(CNM_RECORD_HTTP)
  }

  var kind: UInt8 = 0
  var pid: Int32 = 0
  var startUnixNanoseconds: UInt64 = 0
  var durationNanoseconds: UInt64 = 0
  // Layout: an http record is three cache lines to write and to read (the producer's core and the
  // consumer's are two): the first (kind, pid, times, the exchange's numbers), the connection's
  // identity (``ConnectionCore/reusedCopyStart``, the core's last 64 bytes) and the request head's
  // scalars with its packed text (``HTTPHead/text``) for a typical request. Slots are whole lines
  // (``slotSize``), so the offsets are the lines; `RecordLayoutTests` checks them.
  /// The exchange (http records): the response status, whether the connection served one before,
  /// whether the response was cut short (the connection closed before its framing's end), time to
  /// first byte (+1, so 0 means "no response byte"), sizes, and the request's head.
  var httpStatus: UInt16 = 0
  var httpReused = false
  var httpResponseCutShort = false
  /// ``HTTPVersion``: the exchange's HTTP version (in what was the line's padding).
  var httpProtocol: UInt8 = 0
  /// A gRPC call's status (`grpc-status`), or -1.
  var grpcStatus: Int16 = -1
  var httpFirstByteNanoseconds: UInt64 = 0
  var httpRequestBytes: UInt64 = 0
  var httpResponseBytes: UInt64 = 0
  /// The connection (connection records; an http record's carries all but the host).
  var core = ConnectionCore()
  var httpRequest = HTTPHead()
  /// HTTP/2 only (read when ``httpProtocol`` is ``HTTPVersion/h2``): the stream, whether the
  /// request head's target is its `:path`'s Huffman code (its readers decode it:
  /// `withTargetBytes`), and a gRPC call's `grpc-message` (read when ``grpcStatus`` is not -1).
  var streamID: UInt32 = 0
  var targetIsHuffmanCode = false
  var grpcMessage = FixedText<128>()

  /// `response_complete` (``HTTPRecord/responseComplete``): whether the response ended where its
  /// framing said. `nil` for an HTTP/1 request that no response answered; `false` for an HTTP/2
  /// stream that RST_STREAM, a GOAWAY or the close ended before its response's END_STREAM, whether
  /// or not a response had begun (the stream's reader marks it cut short either way).
  var httpResponseComplete: Bool? {
    httpStatus == 0 && !httpResponseCutShort ? nil : !httpResponseCutShort
  }

  enum HTTPVersion {
    /// No request head was read: the version is not known.
    static let unknown: UInt8 = 0
    static let http10: UInt8 = 1
    static let http11: UInt8 = 2
    static let h2: UInt8 = 3
  }

  /// Reserves a queue slot, lets `fill` write the record, and publishes it. When the queue is full
  /// the record is dropped and counted: the hooks never block the host.
  ///
  /// The slot is not cleared first (zero-filling its 1,344 bytes, and copying whole structs into it,
  /// was most of the cost of writing a record): `fill` writes every field its kind's reader
  /// (`transaction(process:)`) reads, and the other fields keep whatever an earlier record left in
  /// the slot. Text is read only up to its length.
  @inline(never)
  static func emit(_ fill: (UnsafeMutablePointer<RawRecord>) -> Void) {
    guard let queue = cnm_record_queue() else { return }
    var ticket: UInt64 = 0
    guard let raw = cnm_queue_reserve(queue, &ticket) else {
      cnm_queue_count_drop(queue)
      return
    }
    let record = raw.bindMemory(to: RawRecord.self, capacity: 1)
    record.pointee.pid = cnm_current_pid()
    fill(record)
    cnm_queue_publish(queue, ticket)
    cnm_prefetch_next_record()  // for the record that follows (ExchangeLines.streamRecordOffsets)
  }
}
