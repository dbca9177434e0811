import NIOCore
import NIOHTTP1
import NIOPosix
import NetMonitor
import NetMonitorMetrics
import Prometheus
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// A Prometheus `/metrics` endpoint fed with records: what `elfhook export --prometheus ADDR`
/// serves.
///
/// Records go through `MetricsSink` — the one mapping of records to instruments — into a
/// `PrometheusCollectorRegistry` of its own (named as `PrometheusNaming` says), and a small
/// SwiftNIO HTTP/1.1 server on one thread answers `GET /metrics` with the registry in the text
/// exposition format. Listening starts in `init`, so a busy port fails there, before any record
/// is read.
///
/// ```swift
/// let endpoint = try PrometheusEndpoint(address: "127.0.0.1:9464")
/// endpoint.record(transaction)   // from any thread
/// try endpoint.run()             // until close()
/// ```
final class PrometheusEndpoint: Sendable {
  /// The registry the endpoint serves.
  let registry: PrometheusCollectorRegistry
  /// The address it was asked for, as parsed.
  let address: PrometheusAddress
  /// The port it listens on: `address.port`, or the one the system chose for port 0.
  let port: Int
  private let sink: MetricsSink
  private let group: MultiThreadedEventLoopGroup
  private let channel: any Channel
  private let closed = Atomic<Bool>(false)

  /// Starts listening on `address` (`127.0.0.1:9464`, `[::1]:9464`, `:9464`; see
  /// `PrometheusAddress`).
  ///
  /// - Throws: `PrometheusEndpointError.badAddress` for an address of another form,
  ///   `.cannotListen` when the socket cannot be bound (the port is in use…).
  init(address text: String) throws(PrometheusEndpointError) {
    guard let address = PrometheusAddress(text) else { throw .badAddress(text) }
    let registry = PrometheusCollectorRegistry()
    let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
    let bootstrap = ServerBootstrap(group: group)
      .serverChannelOption(.backlog, value: 64)
      .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
      .childChannelInitializer { channel in
        channel.eventLoop.makeCompletedFuture {
          try channel.pipeline.syncOperations.configureHTTPServerPipeline(withErrorHandling: true)
          try channel.pipeline.syncOperations.addHandler(
            PrometheusHTTPHandler { PrometheusNaming.addingHelp(to: registry.emitToBuffer()) })
        }
      }
    do {
      channel = try bootstrap.bind(host: address.host, port: address.port).wait()
    } catch {
      try? group.syncShutdownGracefully()
      throw .cannotListen(address: address.description, reason: Self.reason(error))
    }
    self.registry = registry
    self.address = address
    self.port = channel.localAddress?.port ?? address.port
    self.group = group
    self.sink = MetricsSink(factory: PrometheusNaming.factory(registry: registry))
  }

  /// Adds one record to the metrics. Thread-safe.
  func record(_ transaction: Transaction) {
    sink.record(transaction)
  }

  /// The metrics as a scrape returns them now: the registry's exposition with help lines.
  func exposition() -> [UInt8] {
    PrometheusNaming.addingHelp(to: registry.emitToBuffer())
  }

  /// Serves until `close()` is called (from another thread).
  func run() throws {
    try channel.closeFuture.wait()
  }

  /// Stops listening, closes every connection and ends the server's thread; `run()` returns.
  /// Idempotent. Not to be called from the server's own thread (a scrape's handler).
  func close() {
    guard !closed.exchange(true, ordering: .acquiringAndReleasing) else { return }
    try? channel.close().wait()
    try? group.syncShutdownGracefully()
  }

  /// The system's text for a bind failure (`Address already in use`), or the error's own.
  private static func reason(_ error: any Error) -> String {
    if let error = error as? IOError { return String(cString: strerror(error.errnoCode)) }
    return String(describing: error)
  }
}
