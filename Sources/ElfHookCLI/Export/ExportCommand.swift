import ArgumentParser
import Foundation

/// `elfhook export`: ships record files to an OpenTelemetry Collector over OTLP/HTTP, as spans
/// and metrics, store-and-forward (see ``ExportSession``), or serves them as Prometheus metrics
/// (see ``PrometheusExport``).
struct ExportCommand: ParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "export",
    abstract:
      "Ship records to an OpenTelemetry Collector (OTLP/HTTP: a span per HTTP request, and metrics), serve them to Prometheus, or append them to a JSON Lines file.",
    discussion: """
      Reads record files — JSON Lines from `elfhook run --output FILE`, or the record rings an \
      injected process writes to ELFHOOK_OUTPUT — and POSTs them as OTLP protobuf to \
      URL/v1/traces and URL/v1/metrics (the collector's OTLP/HTTP receiver, port 4318 by default).

      Each HTTP exchange becomes a span named after its method, CLIENT or SERVER, with the \
      OpenTelemetry HTTP attributes (url.full, server.address, http.response.status_code, \
      error.type…); on the first request of a connection, its DNS lookup, socket connect and TLS \
      handshake are child spans. Metrics are cumulative histograms: http.client.request.duration, \
      http.server.request.duration, dns.lookup.duration, and elfhook.* for connect, TLS, time to \
      first byte and sizes. service.name is the process's name unless --service-name is given.

      Nothing is lost: records are sent in batches of up to 512 spans, and a file's cursor (in \
      --state DIR) moves past a batch only once the collector answered 2xx; a ring's slots are \
      freed only then. Run it again after a failure and it goes on where it stopped. Nothing is \
      sent twice but, after a crash, the one batch the collector may have taken just before it — \
      with the same span ids, which derive from the records, so a receiver can tell.

      Without --follow, everything the files hold is sent, then the metrics, and the command \
      exits 0; a collector that cannot be reached after 5 attempts (about 7 s) is an error. \
      With --follow, the files are read as they grow (checked every 200 ms), an unreachable \
      collector is retried with backoff (100 ms doubling to 5 s) while the records wait, metrics \
      go out every 5 seconds, and Ctrl-C or SIGTERM stop it with the cursor saved. A batch the \
      collector refuses (HTTP 4xx) is reported in one line and skipped.

      With --prometheus ADDR instead of --otlp, the same metrics (one mapping, NetMonitorMetrics) \
      are served at http://ADDR/metrics in the Prometheus exposition format, with Prometheus's names \
      (http_client_request_duration_seconds, dns_lookup_duration_seconds, \
      elfhook_connection_errors_total…), the files followed as they grow (every 500 ms) until \
      Ctrl-C. ADDR is HOST:PORT, [IPV6]:PORT, or :PORT / PORT for 127.0.0.1. A Prometheus endpoint \
      holds its totals in memory: restarted, it reads the files again from their start (JSON Lines), \
      which Prometheus sees as a counter reset. It takes a record ring's records out (it becomes the \
      ring's consumer), so do not point it and an OTLP export at the same ring.

      With --jsonl FILE instead, the records are appended to FILE as JSON Lines (what `elfhook \
      run --output` writes), exactly once: each batch is synced to disk before the cursor moves, \
      and a batch written just before a crash is cut off at the next start and written again. \
      --follow and --state work as for --otlp.

      A directory among RECORDS is watched: every record ring in it (ELFHOOK_OUTPUT=DIR/%p.ring) \
      is exported, including those that appear later (with --follow). A ring there whose process \
      has exited is exported to its end and then removed, so a service that restarts or forks \
      for days does not fill /dev/shm. The exporter must see the services' processes (the same \
      pid namespace) to tell which have exited. Files named one by one are never removed.

      Examples:
        elfhook run --output app.jsonl -- ./app
        elfhook export --otlp http://127.0.0.1:4318 app.jsonl
        elfhook export --otlp http://collector:4318 --follow \\
          --service-name checkout app.jsonl
        ELFHOOK_OUTPUT=/dev/shm/app.ring LD_PRELOAD=libElfHookPreload.so ./app &
        elfhook export --otlp https://otel.example.com --follow \\
          --state /var/lib/elfhook /dev/shm/app.ring
        elfhook export --prometheus 127.0.0.1:9464 app.jsonl
        elfhook export --jsonl /var/log/elfhook/records.jsonl --follow \\
          --state /var/lib/elfhook /dev/shm/elfhook
      """
  )

  @Option(
    help: ArgumentHelp(
      "The collector's OTLP/HTTP base URL: requests go to URL/v1/traces and URL/v1/metrics.", valueName: "URL"))
  var otlp: String?

  @Option(
    help: ArgumentHelp(
      "Serve the records' metrics for Prometheus at http://ADDR/metrics (HOST:PORT, [IPV6]:PORT, :PORT), following the files.",
      valueName: "ADDR"))
  var prometheus: String?

  @Option(
    help: ArgumentHelp(
      "Append the records to FILE as JSON Lines, exactly once (created mode 0600, never through a symlink).",
      valueName: "FILE"))
  var jsonl: String?

  @Flag(help: "Keep reading the files as they grow, and wait out collector outages; stop with Ctrl-C or SIGTERM.")
  var follow = false

  @Option(
    help: ArgumentHelp(
      "Where the cursors and metrics persist (default: FIRST-RECORD-FILE.elfhook-export/, created mode 0700).",
      valueName: "DIR"))
  var state: String?

  @Option(help: ArgumentHelp("service.name for every span and metric (default: each process's name).", valueName: "NAME"))
  var serviceName: String?

  @Option(help: ArgumentHelp("With --follow: how often to export the metrics, in seconds.", valueName: "SECONDS"))
  var metricsInterval: Double = 5

  @Argument(
    help: ArgumentHelp(
      "Record files: JSON Lines (`elfhook run --output`) or record rings (ELFHOOK_OUTPUT), or directories of rings.",
      valueName: "RECORDS"))
  var records: [String]

  func validate() throws {
    if let jsonl {
      guard otlp == nil, prometheus == nil else {
        throw ValidationError("--jsonl, --otlp and --prometheus are three exports: run one elfhook export for each")
      }
      guard serviceName == nil else { throw ValidationError("--service-name belongs to --otlp") }
      guard !records.contains(where: { RecordFollower.absolutePath($0) == RecordFollower.absolutePath(jsonl) }) else {
        throw ValidationError("--jsonl \(jsonl) is also a record file to read")
      }
      guard metricsInterval > 0 else { throw ValidationError("--metrics-interval must be positive") }
      return
    }
    switch (otlp, prometheus) {
    case (nil, nil): throw ValidationError("say where the records go: --otlp URL, --prometheus ADDR or --jsonl FILE")
    case (.some, .some):
      throw ValidationError("--otlp and --prometheus are two exports: run one elfhook export for each")
    case (nil, .some):
      for (given, option) in [(follow, "--follow"), (state != nil, "--state"), (serviceName != nil, "--service-name")]
      where given {
        throw ValidationError("\(option) belongs to --otlp (--prometheus always follows the files)")
      }
    case (.some(let otlp), nil):
      guard otlp.hasPrefix("http://") || otlp.hasPrefix("https://") else {
        throw ValidationError("--otlp wants an http:// or https:// URL, not '\(otlp)'")
      }
    }
    guard metricsInterval > 0 else { throw ValidationError("--metrics-interval must be positive") }
  }

  func run() throws {
    StopSignal.install()
    if jsonl == nil, otlp == nil { return try PrometheusExport.serve(address: prometheus!, paths: records) }
    let configuration = ExportConfiguration(
      collectorURL: otlp ?? "", jsonLinesPath: jsonl, recordPaths: records, follow: follow,
      stateDirectory: state ?? ExportStateStore.defaultDirectory(for: records), serviceName: serviceName,
      metricsInterval: metricsInterval)
    let session = ExportSession(configuration: configuration) { message in
      FileHandle.standardError.write(Data("elfhook: \(message)\n".utf8))
    }
    do {
      try session.run()
    } catch let error as RecordFileError {
      throw CommandFailure.input("\(error)")
    }
  }
}
