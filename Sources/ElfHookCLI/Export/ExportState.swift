/// What `elfhook export` keeps between runs, in `STATE/state.json`: per record file (by its
/// absolute path) the cursor after the last acknowledged record, and the cumulative metrics of
/// every acknowledged record. Both are written in one atomic replace, so they always agree.
struct ExportState: Codable, Sendable {
  /// The file format; a state file of another version is refused.
  var version = 1
  var cursors: [String: SourceCursor] = [:]
  var metrics = ExportMetrics()
  /// With `--jsonl FILE`: that file's identity and its size after the last saved batch
  /// (``JSONLinesDestination``). Absent from the state of an OTLP export.
  var jsonLinesOutput: SourceCursor?
}
