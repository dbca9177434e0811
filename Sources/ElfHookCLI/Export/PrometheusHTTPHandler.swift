import NIOCore
import NIOHTTP1

/// Answers one HTTP/1.1 connection of the `/metrics` endpoint: `GET /metrics` (or `HEAD`) gets the
/// metrics in the Prometheus text exposition format (version 0.0.4); any other request, 404.
/// Keep-alive is honoured as the request asks (Prometheus keeps its scrape connection open).
final class PrometheusHTTPHandler: ChannelInboundHandler, RemovableChannelHandler {
  typealias InboundIn = HTTPServerRequestPart
  typealias OutboundOut = HTTPServerResponsePart

  /// The content type Prometheus expects of the text format.
  static let contentType = "text/plain; version=0.0.4; charset=utf-8"

  private let exposition: () -> [UInt8]
  private var request: HTTPRequestHead?

  /// - Parameter exposition: the body of a `GET /metrics`, made at each request.
  init(exposition: @escaping () -> [UInt8]) {
    self.exposition = exposition
  }

  func channelRead(context: ChannelHandlerContext, data: NIOAny) {
    switch unwrapInboundIn(data) {
    case .head(let head): request = head
    case .body: break
    case .end:
      guard let request else { return }
      self.request = nil
      respond(to: request, context: context)
    }
  }

  private func respond(to request: HTTPRequestHead, context: ChannelHandlerContext) {
    let path = request.uri.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
    let found = path == "/metrics" && (request.method == .GET || request.method == .HEAD)
    var body = context.channel.allocator.buffer(capacity: 0)
    if found {
      body.writeBytes(exposition())
    } else {
      body.writeString("404 Not Found: metrics are at GET /metrics\n")
    }
    var headers = HTTPHeaders()
    headers.add(name: "Content-Type", value: found ? Self.contentType : "text/plain; charset=utf-8")
    headers.add(name: "Content-Length", value: String(body.readableBytes))
    let keepAlive = request.isKeepAlive
    if !keepAlive { headers.add(name: "Connection", value: "close") }
    let head = HTTPResponseHead(version: request.version, status: found ? .ok : .notFound, headers: headers)
    context.write(wrapOutboundOut(.head(head)), promise: nil)
    if request.method != .HEAD { context.write(wrapOutboundOut(.body(.byteBuffer(body))), promise: nil) }
    let written = context.writeAndFlush(wrapOutboundOut(.end(nil)))
    if !keepAlive {
      written.assumeIsolated().whenComplete { _ in context.close(promise: nil) }
    }
  }

  func errorCaught(context: ChannelHandlerContext, error: any Error) {
    context.close(promise: nil)
  }
}
