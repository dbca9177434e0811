import CHTTP2
import CNetMonitor

/// An HTTP/2 connection's state: both directions' frame readers and HPACK tables, and the streams
/// under way (`ch2_connection`, streams.c, which reads the frames and follows each stream's
/// halves). About 200 KB, so it lives in a pool entry (`cnm_h2_pool_take`), not in the connection
/// table, and only through pointers: it is never copied, and never initialized whole
/// (`ch2_connection_start` writes the scalars; a page is touched only when a connection uses it).
typealias H2Connection = ch2_connection

extension UnsafeMutablePointer where Pointee == H2Connection {
  /// A connection's state, taken from the pool and made fresh: nil when the pool has no entry left.
  static func take() -> UnsafeMutablePointer<H2Connection>? {
    var generation: UInt32 = 0
    guard let raw = cnm_h2_pool_take(&generation) else { return nil }
    let connection = raw.bindMemory(to: H2Connection.self, capacity: 1)
    ch2_connection_start(connection, generation, H2Streams.callbacks)
    return connection
  }

  /// Gives the entry back to the pool.
  func giveBack() { cnm_h2_pool_give_back(UnsafeMutableRawPointer(self)) }
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
