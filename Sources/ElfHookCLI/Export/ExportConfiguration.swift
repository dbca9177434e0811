/// How an ``ExportSession`` runs: what `elfhook export`'s options say, and the timings tests
/// shorten.
struct ExportConfiguration: Sendable {
  /// The collector's base URL (`http://127.0.0.1:4318`); empty with ``jsonLinesPath``.
  var collectorURL: String
  /// `--jsonl FILE`: records are appended to FILE instead of sent to a collector.
  var jsonLinesPath: String?
  /// The record files, JSON Lines or rings.
  var recordPaths: [String]
  /// Keep following the files as they grow (and wait out collector outages).
  var follow = false
  /// Where cursors and metrics persist (``ExportStateStore``).
  var stateDirectory: String
  /// `service.name` for every resource, instead of each process's name.
  var serviceName: String?
  /// How often followed files are checked for new records, in seconds.
  var pollInterval = 0.2
  /// How often `--follow` exports the cumulative metrics, in seconds.
  var metricsInterval = 5.0
  /// Without `--follow`: attempts per request before giving up on the collector.
  var attempts = 5
  /// The longest wait between two attempts, in seconds.
  var backoffCap = 5.0
  /// How long one request may take, in seconds.
  var requestTimeout = 5.0
}
