/// Where the export of one record file stands: what the collector has acknowledged. Persisted in
/// the state file (``ExportStateStore``).
///
/// For a JSON Lines file, `offset` is the byte offset just after the last acknowledged line and
/// `line` the number of lines up to there; for a record ring, `offset` is the queue's read
/// position once the acknowledged slots are released. `device` and `inode` (and, for a ring,
/// `ringCreatedUnixNs`) say which file the cursor belongs to: a file replaced under the same
/// name starts over.
struct SourceCursor: Codable, Equatable, Sendable {
  var device: UInt64
  var inode: UInt64
  var offset: UInt64
  var line: Int = 0
  var ringCreatedUnixNs: UInt64?

  /// Whether the cursor was written for the file `other` identifies.
  func isSameFile(as other: SourceCursor) -> Bool {
    device == other.device && inode == other.inode && ringCreatedUnixNs == other.ringCreatedUnixNs
  }
}
