import NetMonitor

#if canImport(Glibc)
  import Glibc
#endif

/// `elfhook export --prometheus ADDR RECORDS…`: serves the records of files as Prometheus
/// metrics, following the files as they grow (``RecordFollower``, as the other exports do; a ring
/// is drained, so the endpoint becomes its consumer).
enum PrometheusExport {
  /// How often the files are polled for new records.
  static let pollInterval: Duration = .milliseconds(500)

  /// Starts the endpoint on `address`, reads `paths` (JSON Lines or record rings), then polls them
  /// every `pollInterval` while serving, until SIGINT or SIGTERM (``StopSignal``, installed by the
  /// caller) asks it to stop.
  ///
  /// Says `elfhook: serving Prometheus metrics at http://ADDR/metrics` on stderr once listening, and
  /// one line for each line of a file that is not a record (which is skipped). A directory among
  /// `paths` is watched for rings, as `--otlp` and `--jsonl` watch one.
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
    let follower: RecordFollower
    do {
      follower = try RecordFollower(paths: paths, saved: [:], log: Terminal.say)
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
    do {
      try follow(follower, into: endpoint, until: stop)
    } catch let error as RecordFileError {
      throw CommandFailure.input(error.description)
    }
  }

  /// Reads `follower`'s files into `endpoint` every `interval` until `stop()` says so; problems
  /// go to stderr, one line each. Every record read is taken at once: the totals live in memory.
  static func follow(
    _ follower: RecordFollower, into endpoint: PrometheusEndpoint, interval: Duration = pollInterval,
    until stop: () -> Bool
  ) throws {
    while !stop() {
      _ = try follower.discoverRings(saved: [:])
      let pass = try follower.pass(atEnd: false) { batch, entry in
        for record in batch.records { endpoint.record(record.transaction) }
        entry.source.acknowledge(batch)
        entry.source.didPersist(batch)
        return true
      }
      if pass.skippedUnfinished { continue }  // a ring's dead writer left a slot: read on at once
      let (seconds, attoseconds) = interval.components
      var request = timespec(tv_sec: Int(seconds), tv_nsec: Int(attoseconds / 1_000_000_000))
      var remaining = timespec()
      while nanosleep(&request, &remaining) != 0 && errno == EINTR { request = remaining }
    }
  }
}
