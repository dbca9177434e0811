import ArgumentParser
import Foundation

/// `elfhook export`: ships record files to an OpenTelemetry Collector over OTLP/HTTP, as spans
/// and metrics, store-and-forward (see ``ExportSession``).
struct ExportCommand: ParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "export",
    abstract: "Ship records to an OpenTelemetry Collector (OTLP/HTTP): a span per HTTP request, and metrics.",
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

      Examples:
        elfhook run --output app.jsonl -- ./app
        elfhook export --otlp http://127.0.0.1:4318 app.jsonl
        elfhook export --otlp http://collector:4318 --follow --service-name checkout app.jsonl
        ELFHOOK_OUTPUT=/dev/shm/app.ring LD_PRELOAD=libElfHookPreload.so ./app &
        elfhook export --otlp https://otel.example.com --follow --state /var/lib/elfhook /dev/shm/app.ring
      """
  )

  @Option(
    help: ArgumentHelp(
      "The collector's OTLP/HTTP base URL: requests go to URL/v1/traces and URL/v1/metrics.", valueName: "URL"))
  var otlp: String

  // PROMETHEUS: `--prometheus ADDR` goes here — the lead wires it at merge, with the
  // PrometheusEndpoint type from the prom branch (serve the same records as Prometheus metrics
  // on ADDR). When it lands, `--otlp` becomes optional and `validate()` requires one of the two.

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
    help: ArgumentHelp("Record files: JSON Lines (`elfhook run --output`) or record rings (ELFHOOK_OUTPUT).", valueName: "RECORDS"))
  var records: [String]

  func validate() throws {
    guard otlp.hasPrefix("http://") || otlp.hasPrefix("https://") else {
      throw ValidationError("--otlp wants an http:// or https:// URL, not '\(otlp)'")
    }
    guard metricsInterval > 0 else { throw ValidationError("--metrics-interval must be positive") }
  }

  func run() throws {
    StopSignal.install()
    let configuration = ExportConfiguration(
      collectorURL: otlp, recordPaths: records, follow: follow,
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
