import NetMonitor

#if canImport(Glibc)
  import Glibc
#endif

/// `elfhook export --prometheus ADDR RECORDS…`: serves the records of files as Prometheus
/// metrics, following the files as they grow.
enum PrometheusExport {
  /// How often the files are polled for new records.
  static let pollInterval: Duration = .milliseconds(500)

  /// Starts the endpoint on `address`, reads `paths` (JSON Lines or record rings), then polls them
  /// every `pollInterval` while serving, until SIGINT or SIGTERM (``StopSignal``, installed by the
  /// caller) asks it to stop.
  ///
  /// Says `elfhook: serving Prometheus metrics at http://ADDR/metrics` on stderr once listening, and
  /// one line for each line of a file that is not a record (which is skipped).
  ///
  /// - Throws: `CommandFailure.input` with one line when the address is malformed or busy, or a
  ///   file cannot be opened.
  static func serve(address: String, paths: [String]) throws {
    try serve(address: address, paths: paths, listening: { _ in }, until: { StopSignal.isRequested })
  }

  /// `serve(address:paths:)` with hooks for tests: `listening` gets the endpoint once it listens
  /// (its `port` tells which port 0 became), and the endpoint closes and the call returns once
  /// `stop()` says so (checked after each poll).
  static func serve(
    address: String, paths: [String], listening: (PrometheusEndpoint) -> Void, until stop: () -> Bool
  ) throws {
    let endpoint: PrometheusEndpoint
    let poller: RecordFilePoller
    do {
      poller = try RecordFilePoller(paths: paths)
      endpoint = try PrometheusEndpoint(address: address)
    } catch let error as RecordFileError {
      throw CommandFailure.input(error.description)
    } catch {
      throw CommandFailure.input(String(describing: error))
    }
    defer { endpoint.close() }
    let shown = PrometheusAddress(host: endpoint.address.host, port: endpoint.port)
    Terminal.say("serving Prometheus metrics at http://\(shown)/metrics")
    listening(endpoint)
    follow(poller, into: endpoint, until: stop)
  }

  /// Polls `poller` into `endpoint` every `interval` until `stop()` says so; problems go to
  /// stderr, one line each.
  static func follow(
    _ poller: RecordFilePoller, into endpoint: PrometheusEndpoint, interval: Duration = pollInterval,
    until stop: () -> Bool
  ) {
    while !stop() {
      for problem in poller.poll({ endpoint.record($0) }) {
        Terminal.say(problem.description)
      }
      let (seconds, attoseconds) = interval.components
      var request = timespec(tv_sec: Int(seconds), tv_nsec: Int(attoseconds / 1_000_000_000))
      var remaining = timespec()
      while nanosleep(&request, &remaining) != 0 && errno == EINTR { request = remaining }
    }
  }
}
