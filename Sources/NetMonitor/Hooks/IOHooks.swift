@preconcurrency import CNetMonitor
import Glibc

// The data path: the hooks themselves are the C functions `cnm_hook_read` … `cnm_hook_sendfile64`
// and `cnm_hook_close` (CShims/CNetMonitor/io_hooks.c: why in C is said there); this is their slow
// path, called only for tracked connections.

/// `result` bytes arrived on a tracked connection.
let receivedCallback: cnm_traffic_callback = { slot, buffer, vector, vectorCount, result in
  guard let slot else { return }
  let bytes: Traffic.Bytes = buffer != nil ? .buffer(buffer) : vector != nil ? .vector(vector, vectorCount) : .unknown
  Traffic.received(slot.assumingMemoryBound(to: ConnectionSlot.self), bytes, result)
}

/// `result` bytes left through a tracked connection.
let sentCallback: cnm_traffic_callback = { slot, buffer, vector, vectorCount, result in
  guard let slot else { return }
  let bytes: Traffic.Bytes = buffer != nil ? .buffer(buffer) : vector != nil ? .vector(vector, vectorCount) : .unknown
  Traffic.sent(slot.assumingMemoryBound(to: ConnectionSlot.self), bytes, result)
}

/// A tracked connection is being closed: its record is made, before the original closes it.
let closeCallback: cnm_close_callback = { fd in
  let saved = cnm_errno()
  Traffic.closed(fd)
  cnm_set_errno(saved)
}
