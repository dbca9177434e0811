/// A record file the exporter reads: records come out in batches, and a batch's records are
/// given up (the cursor moved past them, a ring's slots released) only once the collector has
/// acknowledged them.
///
/// The exporter calls, for each batch: ``nextBatch(maxSpans:atEnd:)``; sends it; then
/// ``acknowledge(_:)`` (the new cursor, which it persists); then ``didPersist(_:)``.
protocol RecordSource: AnyObject {
  /// The file, as named on the command line.
  var path: String { get }
  /// The position after the last acknowledged record.
  var cursor: SourceCursor { get }

  /// The next records after the cursor — at most ``TraceBatch/maxSpans`` spans' worth — or
  /// `nil` when there are none yet. The cursor does not move. `atEnd` says the file will not grow
  /// any more (no `--follow`): a last line without its newline is then read too.
  ///
  /// - Throws: `RecordFileError` for a file that cannot be read (a line that is not a record is
  ///   reported and skipped).
  func nextBatch(maxSpans: Int, atEnd: Bool) throws -> SourceBatch?

  /// Moves the cursor past `batch`, which the collector has acknowledged.
  func acknowledge(_ batch: SourceBatch)

  /// Called once the cursor after `batch` is on disk: a ring frees the batch's slots here.
  func didPersist(_ batch: SourceBatch)
}

/// Records read from one source and not yet acknowledged.
struct SourceBatch: Sendable {
  var records: [SourcedRecord]
  /// The source's cursor once the batch is acknowledged.
  var cursorAfter: SourceCursor
  /// For a ring: how many slots the batch covers (records plus unreadable slots).
  var slotCount: Int = 0

  /// How many spans the batch's records become.
  var spanCount: Int { records.reduce(0) { $0 + $1.spanCount } }
}
