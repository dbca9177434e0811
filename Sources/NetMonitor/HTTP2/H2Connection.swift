import CHTTP2
import CNetMonitor

/// One direction of an HTTP/2 connection: its frame reader, its HPACK table, and the fields of the
/// last header block it decoded. Written by the thread that moves that direction's bytes only.
struct H2Direction {
  var reader: ch2_reader
  var decoder: ch2_hpack_decoder
  var fields: ch2_fields
}

/// An HTTP/2 connection's state: both directions and the streams under way. About 200 KB, so it
/// lives in a pool entry (`cnm_h2_pool_take`), not in the connection table, and only through
/// pointers: it is never copied, and never initialized whole (``start(generation:)`` writes the
/// scalars; a page is touched only when a connection uses it).
///
/// Streams have a slot each, by their identifier (``H2Connection/streamSlot(_:)``): 128 streams in
/// flight at once are followed exactly; a stream opened while the slot it maps to still holds one
/// 128 streams older takes the slot over, and the older stream is not recorded.
struct H2Connection {
  static let streamCapacity = 128

  /// This connection's taking of its pool entry (`cnm_h2_pool_take`): every tag of its streams
  /// carries it, so that a stream slot a previous connection left is never taken for this one's.
  var generation: UInt32
  /// Streams opened, by either side: a stream's ``H2Stream/ordinal`` (0: the connection's first).
  var streamsOpened: UInt32
  /// Streams recorded, counted by who recorded them (no counter has two writers).
  var recordedByRequests: UInt32
  var recordedByResponses: UInt32
  var recordedAtFinish: UInt32
  var requests: H2Direction
  var responses: H2Direction
  var streams: InlineArray<128, H2Stream>

  /// The streams recorded on this connection.
  var recorded: UInt64 { UInt64(recordedByRequests &+ recordedByResponses &+ recordedAtFinish) }
}

extension UnsafeMutablePointer where Pointee == H2Connection {
  /// A connection's state, taken from the pool and made fresh: nil when the pool has no entry left.
  static func take() -> UnsafeMutablePointer<H2Connection>? {
    var generation: UInt32 = 0
    guard let raw = cnm_h2_pool_take(&generation) else { return nil }
    let connection = raw.bindMemory(to: H2Connection.self, capacity: 1)
    connection.start(generation: generation)
    return connection
  }

  /// Makes the entry fresh for a new connection: scalars only (the streams' tags carry the
  /// generation, so old slots are not this connection's).
  private func start(generation: UInt32) {
    pointee.generation = generation
    pointee.streamsOpened = 0
    pointee.recordedByRequests = 0
    pointee.recordedByResponses = 0
    pointee.recordedAtFinish = 0
    ch2_reader_init(pointer(to: \.requests.reader)!, 1)  // the client's frames follow its preface
    ch2_hpack_init(pointer(to: \.requests.decoder)!)
    ch2_reader_init(pointer(to: \.responses.reader)!, 0)
    ch2_hpack_init(pointer(to: \.responses.decoder)!)
  }

  /// Gives the entry back to the pool.
  func giveBack() { cnm_h2_pool_give_back(UnsafeMutableRawPointer(self)) }

  /// The direction that carries requests (the client's frames) or responses (the server's).
  @inline(__always)
  func direction(requests: Bool) -> UnsafeMutablePointer<H2Direction> {
    requests ? pointer(to: \.requests)! : pointer(to: \.responses)!
  }

  /// The slot of stream `id`: client-initiated (odd) streams in order, server-initiated (even)
  /// ones half the table away, so that a pushed stream meets the stream that promised it rarely.
  @inline(__always)
  func streamSlot(_ id: UInt32) -> UnsafeMutablePointer<H2Stream> {
    let index = Int((id >> 1) &+ (id & 1 == 0 ? 64 : 0)) & (H2Connection.streamCapacity - 1)
    return UnsafeMutableRawPointer(pointer(to: \.streams)!).assumingMemoryBound(to: H2Stream.self) + index
  }

  /// The tag of stream `id` on this connection (``H2Stream/state`` without its bits).
  @inline(__always)
  func tag(_ id: UInt32) -> UInt64 {
    UInt64(pointee.generation & 0x3FFF_FFFF) << 34 | UInt64(id & 0x7FFF_FFFF) << 3
  }
}

/// The connection table's link to a connection's HTTP/2 state, and how each direction's bytes are
/// read: undecided until its first bytes say, then HTTP/1.x or HTTP/2 for good (but for an
/// HTTP/1.1 upgrade to h2c, which decides again where the tunnel begins).
struct H2Link {
  /// The address of the connection's ``H2Connection`` (set once, with compare-and-swap: either
  /// direction may find HTTP/2 first); 0: none.
  var connection: UInt64 = 0
  /// ``Mode`` of the request direction and of the response direction.
  var requestsMode: UInt8 = 0
  var responsesMode: UInt8 = 0
  /// Bytes held while a direction's first bytes do not say yet (fewer than 9), and how many.
  var requestsHeldCount: UInt8 = 0
  var responsesHeldCount: UInt8 = 0
  var requestsHeld: UInt64 = 0
  var responsesHeld: UInt64 = 0

  enum Mode {
    /// No byte seen yet (or a tunnel just began): the first bytes decide.
    static let undecided: UInt8 = 0
    static let http1: UInt8 = 1
    static let h2: UInt8 = 2
    /// HTTP/2 that stopped being read (a malformed frame or header block, no pool entry left).
    static let stopped: UInt8 = 3
    /// An HTTP/1.x tunnel (CONNECT, a 101 to another protocol) that is not HTTP/2: not read.
    static let tunnel: UInt8 = 4
  }

  @inline(__always)
  func mode(requests: Bool) -> UInt8 { requests ? requestsMode : responsesMode }
}
