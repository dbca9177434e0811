import CNetMonitor
import Glibc

/// What the hooks do for a tracked connection, out of line so the hooks themselves stay a bounds
/// check and a byte load for every other descriptor. Nothing here allocates, locks or does I/O,
/// and errno is put back wherever a call could change it.
enum Traffic {
  /// `count` bytes arrived on `slot`'s socket (`read`, `recv`, …).
  @inline(never)
  static func received(_ slot: UnsafeMutablePointer<ConnectionSlot>, _ count: Int) {
    guard count > 0 else { return }
    establishIfConnecting(slot)
    cnm_add_u64(&slot.pointee.core.bytesReceived, UInt64(count))
  }

  /// `count` bytes left through `slot`'s socket (`write`, `send`, `sendfile`, …).
  @inline(never)
  static func sent(_ slot: UnsafeMutablePointer<ConnectionSlot>, _ count: Int) {
    guard count > 0 else { return }
    establishIfConnecting(slot)
    cnm_add_u64(&slot.pointee.core.bytesSent, UInt64(count))
  }

  /// A non-blocking connect whose completion the host never asked about (SO_ERROR) is
  /// established by the time data moves.
  @inline(__always)
  static func establishIfConnecting(_ slot: UnsafeMutablePointer<ConnectionSlot>) {
    if slot.pointee.core.phase == ConnectionCore.Phase.connecting { established(slot) }
  }

  static func established(_ slot: UnsafeMutablePointer<ConnectionSlot>) {
    slot.pointee.core.connectEnd = MonotonicClock.now()
    slot.pointee.core.phase = ConnectionCore.Phase.established
  }

  static func failed(_ slot: UnsafeMutablePointer<ConnectionSlot>, call: HookedCall, code: Int32) {
    slot.pointee.core.phase = ConnectionCore.Phase.failed
    if slot.pointee.core.errorCall == 0 {
      slot.pointee.core.errorCall = call.rawValue
      slot.pointee.core.errorCode = code
    }
    if slot.pointee.core.connectEnd == 0 && call == .connect || call == .getsockopt {
      slot.pointee.core.connectEnd = MonotonicClock.now()
    }
  }

  /// Starts tracking a connection on `fd`: a client after connect, a server after accept.
  static func open(
    _ fd: Int32, role: UInt8, transport: UInt8, peer: PeerAddress, start: UInt64
  ) -> UnsafeMutablePointer<ConnectionSlot>? {
    if ConnectionTable.tracked(fd) != nil { closed(fd) }  // closed behind our back (fclose, dup2)
    guard let slot = ConnectionTable.track(fd) else { return nil }
    slot.pointee.core.id = Recorder.nextConnectionID()
    slot.pointee.core.role = role
    slot.pointee.core.transport = transport
    slot.pointee.core.peer = peer
    slot.pointee.core.startNanoseconds = start
    slot.pointee.core.startUnixNanoseconds = MonotonicClock.unixNow() &- (MonotonicClock.now() &- start)
    slot.pointee.core.connectStart = start
    if let resolution = Resolutions.lookUp(peer) {
      slot.pointee.core.host = resolution.host
      slot.pointee.core.dnsNanoseconds = resolution.lookupNanoseconds
      slot.pointee.core.hasDNS = 1
    }
    return slot
  }

  /// `fd` is being closed: its connection record goes to the recorder.
  static func closed(_ fd: Int32) {
    guard let slot = ConnectionTable.tracked(fd) else { return }
    ConnectionTable.untrack(fd)
    let end = MonotonicClock.now()
    let core = slot.pointee.core
    RawRecord.emit { record in
      record.kind = RawRecord.Kind.connection
      record.startUnixNanoseconds = core.startUnixNanoseconds
      record.durationNanoseconds = end &- core.startNanoseconds
      record.core = core
    }
  }
}
