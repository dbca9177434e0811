/// What the hooks know about one tracked connection. POD and valid when all zero, because it
/// lives in the fd-indexed table mapped at start (`cnm_states`); the hooks update it in place
/// without allocating or locking.
///
/// Layout: what an http record copies is a suffix (see ``httpCopyStart``), its identity last, so
/// that in a record (``RawRecord``) the identity sits in one cache line right before the request.
struct ConnectionCore: BitwiseCopyable {
  /// The name the peer's address was resolved from (getaddrinfo), or the TLS server name. First:
  /// an http record never reads it, and copies from after it (``httpCopyStart``).
  var host = FixedText<128>()
  // The setup's times: what an http record reads of them only when its connection was new.
  var dnsNanoseconds: UInt64 = 0
  var startUnixNanoseconds: UInt64 = 0
  var startNanoseconds: UInt64 = 0
  var connectStart: UInt64 = 0
  var connectEnd: UInt64 = 0
  var tlsStart: UInt64 = 0
  var tlsEnd: UInt64 = 0
  /// Copied from the entry's head at close (the hooks count in the head).
  var bytesSent: UInt64 = 0
  var bytesReceived: UInt64 = 0
  var tlsBytesSent: UInt64 = 0
  var tlsBytesReceived: UInt64 = 0
  var httpExchanges: UInt64 = 0
  /// The failed call (``HookedCall``) and its errno / SSL error; 0 when none.
  var errorCall: UInt8 = 0
  /// Why HTTP stopped being read on this connection: a `ch2_status` (a malformed HTTP/2 frame or
  /// header block), ``H2Traffic/poolExhausted``; 0 when it did not. (In the padding before
  /// `errorCode`.)
  var httpStop: UInt8 = 0
  var errorCode: Int32 = 0
  /// The application protocol the TLS handshake chose by ALPN ("h2", "http/1.1"); empty without
  /// TLS, without ALPN, or with TLS that no hooked library decodes. Setup, not identity: read by
  /// connection records only. Its 24 bytes put the identity at a record's cache line (where
  /// `RawRecord` had padding; `RecordLayoutTests` checks).
  var tlsALPN = FixedText<16>()
  // The identity: all an http record reads of a connection that served an exchange before
  // (``reusedCopyStart``), 64 bytes.
  /// Unique in the process; 0 for an unused entry.
  var id: UInt64 = 0
  /// The descriptor (the entry's index in the table).
  var fd: Int32 = 0
  /// ``Role``.
  var role: UInt8 = 0
  /// ``Transport``.
  var transport: UInt8 = 0
  /// ``Phase``.
  var phase: UInt8 = 0
  /// Copied from the entry's head at close: its socket bytes were ciphertext (TLS).
  var isTLS: UInt8 = 0
  /// 1 when this connection took a lookup's time (`dnsNanoseconds`): the first connection to an
  /// address the lookup returned (``Resolutions``).
  var hasDNS: UInt8 = 0
  var peer = PeerAddress()
  var tlsVersion = FixedText<16>()

  /// Where an http record's copy of its connection starts; it runs to the end: all but the host,
  /// which its reader never reads.
  static var httpCopyStart: Int { MemoryLayout<ConnectionCore>.offset(of: \.dnsNanoseconds)! }
  /// Where the copy starts for an http record on a connection that served an exchange before: its
  /// identity alone (id, role, peer, TLS version; no setup to show). Most of a server's records:
  /// one cache line copied instead of four.
  static var reusedCopyStart: Int { MemoryLayout<ConnectionCore>.offset(of: \.id)! }

  enum Role {
    static let client: UInt8 = 1
    static let server: UInt8 = 2
  }

  enum Transport {
    static let tcp: UInt8 = 1
    static let udp: UInt8 = 2
  }

  enum Phase {
    /// A non-blocking connect returned EINPROGRESS; established at SO_ERROR 0 or first I/O.
    static let connecting: UInt8 = 1
    static let established: UInt8 = 2
    static let failed: UInt8 = 3
  }
}

/// The hooked calls an error can name, as stored in ``ConnectionCore/errorCall``.
enum HookedCall: UInt8, CaseIterable {
  case none = 0, connect, sslHandshake

  /// The C function's name, as records report it.
  var name: String {
    switch self {
    case .none: ""
    case .connect: "connect"
    case .sslHandshake: "SSL_do_handshake"
    }
  }
}
