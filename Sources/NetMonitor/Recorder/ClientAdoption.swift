import CNetMonitor

extension Traffic {
  /// Takes over the client connections the injected library tracked itself before it loaded the
  /// monitor (`cnm_handoff`'s clients; CShims/CElfHookPreload/clients.c): each becomes an entry of
  /// this table, as if the connect hook had seen it, with what the library counted and recorded —
  /// its bytes, the exchanges it recorded, and the exchange under way as a replay stopped halfway
  /// (``ExchangeReplay``): Swift parses that from the heads the library kept, at the times they
  /// moved, at the connection's next call or at its close. Called before the hooks are installed,
  /// while no call on these connections can be in the library's hands: it waited for those under
  /// way, and holds the next ones until the monitor runs.
  static func adoptClients(of handoff: UnsafePointer<cnm_handoff>) {
    let given = handoff.pointee
    Recorder.continueConnectionIDs(after: given.last_connection_id)
    guard let entries = given.clients, let tracked = given.clients_tracked else { return }
    for fd in 0..<Int(given.client_count) where tracked[fd] != 0 {
      let entry = UnsafeRawPointer(entries + fd * given.client_entry_size)
      adoptClient(head: entry.assumingMemoryBound(to: cnm_connection_head.self), core: entry + given.client_core_offset)
      // The TLS session the library paired with it (libcurl's BIO names no descriptor that
      // SSL_get_fd could give): the TLS hooks find the connection under it.
      if given.client_ssl_offset != 0, let ssl = (entry + given.client_ssl_offset).load(as: UnsafeMutableRawPointer?.self),
        let slot = ConnectionTable.tracked(Int32(fd))
      {
        _ = TLSSession.remember(ssl, slot)
      }
      if given.client_h2_offset != 0, let slot = ConnectionTable.tracked(Int32(fd)) {
        adoptH2(entry.load(fromByteOffset: given.client_h2_offset, as: cnm_client_h2.self), into: slot)
      }
    }
  }

  /// The HTTP/2 state the library read the connection's session with (CShims/CElfHookPreload/
  /// h2_clients.c): the frame readers, tables and streams under way, in the library's pool. The
  /// monitor reads on with it where it is, its streams recorded through ``H2Streams`` from now on;
  /// ``H2Traffic/finish(_:)``'s give-back leaves an entry of another pool alone.
  static func adoptH2(_ given: cnm_client_h2, into slot: UnsafeMutablePointer<ConnectionSlot>) {
    guard let raw = given.connection else { return }
    raw.assumingMemoryBound(to: H2Connection.self).pointee.callbacks = H2Streams.callbacks
    slot.pointee.h2.connection = UInt64(UInt(bitPattern: raw))
    slot.pointee.h2.requestsMode = given.requests_stopped != 0 ? H2Link.Mode.stopped : H2Link.Mode.h2
    slot.pointee.h2.responsesMode =
      given.responses_seen == 0 ? H2Link.Mode.undecided
      : given.responses_stopped != 0 ? H2Link.Mode.stopped : H2Link.Mode.h2
    updateWatch(slot)
  }

  /// One connection: the library's core is a `ConnectionCore` (cnm_record_layout.h, checked by
  /// `RecordLayoutTests`), its head one of this table's heads.
  static func adoptClient(head: UnsafePointer<cnm_connection_head>, core: UnsafeRawPointer) {
    let fd = core.load(fromByteOffset: MemoryLayout<ConnectionCore>.offset(of: \.fd)!, as: Int32.self)
    if ConnectionTable.tracked(fd) != nil { closed(fd, isOpen: false) }
    guard let slot = ConnectionTable.track(fd) else { return }
    UnsafeMutableRawPointer(slot.pointer(to: \.core)!).copyMemory(from: core, byteCount: MemoryLayout<ConnectionCore>.size)
    slot.pointee.head = head.pointee
    updateWatch(slot)
  }
}
