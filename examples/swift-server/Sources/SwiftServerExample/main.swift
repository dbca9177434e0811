// A small Hummingbird server whose network traffic is recorded by NetMonitor: one call at start-up,
// no other change to the server. See README.md.
//
//   UPSTREAM=http://localhost:8081/data RECORDS=network.jsonl swift run swift-server-example 8080
//
// GET /hello answers locally; GET /proxy fetches UPSTREAM with AsyncHTTPClient and returns its body.
// The argument is the port on 127.0.0.1 (0: any free port); "PORT <n>" is printed once listening.
// With TLS_CERT_FILE and TLS_KEY_FILE (PEM) the server speaks HTTPS on that port (swift-nio-ssl).
// SIGTERM or SIGINT stops the server gracefully, then the records still queued are written.
import AsyncHTTPClient
import Glibc
import Hummingbird
import HummingbirdCore
import HummingbirdTLS
import Metrics
import NIOCore
import NIOPosix
import NIOSSL
import NetMonitor
import NetMonitorMetrics
import Prometheus

let environment = Environment()  // Hummingbird's view of the process environment
let port = CommandLine.arguments.dropFirst().first.flatMap { Int($0) } ?? 8080
let upstream = environment.get("UPSTREAM") ?? "http://localhost:8081/"

// The server's metrics backend, as it would have one anyway: swift-metrics into swift-prometheus,
// served at GET /metrics.
let registry = PrometheusCollectorRegistry()
var prometheus = PrometheusMetricsFactory(registry: registry)
// Prometheus names with units (http_client_request_duration_seconds), one label set per metric.
prometheus.nameAndLabelSanitizer = ElfHookMetric.prometheusNameAndLabels
MetricsSystem.bootstrap(prometheus)

// The one call: every DNS lookup, connection and HTTP/1.x exchange of this process becomes a record,
// written as a JSON line and handed to the metrics backend.
try NetMonitor.start(
  sink: MultiplexSink([
    try JSONLinesSink(path: environment.get("RECORDS") ?? "network.jsonl"),
    MetricsSink(factory: prometheus),  // given the factory, the sink keeps the instruments it makes
  ]))

var clientConfiguration = HTTPClient.Configuration()
if let caFile = environment.get("UPSTREAM_CA_FILE") {  // an HTTPS upstream with its own certificate
  var tls = TLSConfiguration.makeClientConfiguration()
  tls.trustRoots = .file(caFile)
  clientConfiguration.tlsConfiguration = tls
}
let clientLoops = MultiThreadedEventLoopGroup(numberOfThreads: 1)
let client = HTTPClient(eventLoopGroup: clientLoops, configuration: clientConfiguration)

let router = Router()
router.get("hello") { _, _ in "Hello from Hummingbird\n" }
router.get("metrics") { _, _ in String(decoding: registry.emitToBuffer(), as: UTF8.self) }
router.get("proxy") { _, _ -> Response in
  let answer = try await client.execute(HTTPClientRequest(url: upstream), timeout: .seconds(10))
  let body = try await answer.body.collect(upTo: 64 << 20)
  return Response(status: .init(code: Int(answer.status.code)), body: .init(byteBuffer: body))
}

// HTTPS when given a certificate: swift-nio-ssl's BoringSSL, linked into this executable, as for the
// upstream calls. NetMonitor reads both through the same hooks; nothing here is for it.
var server = HTTPServerBuilder.http1()
if let certificate = environment.get("TLS_CERT_FILE"), let key = environment.get("TLS_KEY_FILE") {
  let chain = try NIOSSLCertificate.fromPEMFile(certificate).map { NIOSSLCertificateSource.certificate($0) }
  let tls = TLSConfiguration.makeServerConfiguration(
    certificateChain: chain, privateKey: .privateKey(try NIOSSLPrivateKey(file: key, format: .pem)))
  server = try .tls(.http1(), tlsConfiguration: tls)
}

let app = Application(
  router: router,
  server: server,
  configuration: .init(address: .hostname("127.0.0.1", port: port)),
  onServerRunning: { channel in
    print("PORT \(channel.localAddress?.port ?? port)")
    fflush(nil)  // stdout is a pipe in the tests: push the line out now
  }
)
try await app.runService()  // returns after SIGTERM/SIGINT, once open requests are answered

// Clean shutdown. A connection's record is complete when its socket is closed: the client's
// shutdown closes its pooled connections, and stopping its event loops waits until every socket is
// closed (a TLS connection closes a moment after the client's shutdown, once close_notify is sent).
// Then flush hands every queued record to the sink before the process exits.
try await client.shutdown().get()
try await clientLoops.shutdownGracefully()
NetMonitor.flush()
