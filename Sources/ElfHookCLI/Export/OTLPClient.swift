import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix

/// What became of one export request.
enum OTLPSendOutcome: Equatable, Sendable {
  /// HTTP 2xx: the collector has the data. `body` is its response (an `Export…ServiceResponse`).
  case accepted(body: [UInt8])
  /// Worth sending again: no connection, a timeout, HTTP 429, or a 5xx. `reason` is one phrase.
  case retryable(reason: String)
  /// The collector refused the data (a 4xx other than 429): sending it again would not help.
  case rejected(reason: String)
}

/// POSTs OTLP/HTTP protobuf requests to a collector: `URL/v1/traces` and `URL/v1/metrics`, with
/// `Content-Type: application/x-protobuf`.
///
/// Built on async-http-client (SwiftNIO): HTTP/1.1 and HTTP/2, `https` collectors with the
/// system's trust roots, connection reuse between batches. The exporter is a sequential loop,
/// so each request is waited for (`EventLoopFuture.wait()`, from a thread that is not an event
/// loop).
final class OTLPClient {
  /// The collector's base URL, without a trailing `/`.
  let baseURL: String
  /// How long one request may take, connecting included. Connecting may take 1 s: a refused
  /// connection is retried by the client's pool until then, so an attempt at a collector that is
  /// down takes about 1 s.
  let requestTimeout: TimeAmount
  private let client: HTTPClient

  /// A client of the collector at `baseURL` (`http://host:4318`, `https://…`).
  init(baseURL: String, requestTimeout: TimeAmount = .seconds(10)) {
    self.baseURL = baseURL.hasSuffix("/") ? String(baseURL.dropLast()) : baseURL
    self.requestTimeout = requestTimeout
    var configuration = HTTPClient.Configuration(
      timeout: .init(connect: .seconds(1), read: requestTimeout), decompression: .disabled)
    configuration.connectionPool.idleTimeout = .seconds(30)
    client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
  }

  deinit { try? client.syncShutdown() }

  /// Sends `body` to `URL/<path>` (`v1/traces`, `v1/metrics`) and classifies the answer.
  func post(_ path: String, body: [UInt8]) -> OTLPSendOutcome {
    let request: HTTPClient.Request
    do {
      request = try HTTPClient.Request(
        url: baseURL + "/" + path, method: .POST,
        headers: ["Content-Type": "application/x-protobuf", "User-Agent": "elfhook-export"], body: .bytes(body))
    } catch {
      return .rejected(reason: "invalid URL \(baseURL)/\(path)")
    }
    let response: HTTPClient.Response
    do {
      response = try client.execute(request: request, deadline: .now() + requestTimeout).wait()
    } catch {
      return .retryable(reason: Self.describe(error))
    }
    let status = response.status
    let bytes = response.body.map { Array($0.readableBytesView) } ?? []
    let answer = "HTTP \(status.code) \(status.reasonPhrase)"
    switch status.code {
    case 200..<300: return .accepted(body: bytes)
    case 429, 500..<600: return .retryable(reason: answer)
    default:
      let text = String(decoding: bytes.prefix(200), as: UTF8.self).split(whereSeparator: \.isNewline).first
      return .rejected(reason: text.map { "\(answer): \($0)" } ?? answer)
    }
  }

  /// One phrase for a transport error: `connection refused`, `timed out`…
  static func describe(_ error: any Error) -> String {
    if let io = error as? IOError { return String(cString: strerror(io.errnoCode)).lowercased() }
    if let connection = error as? NIOConnectionError, let first = connection.connectionErrors.first {
      return describe(first.error)
    }
    if let client = error as? HTTPClientError {
      switch client {
      case .connectTimeout: return "connect timed out"
      case .deadlineExceeded, .readTimeout: return "timed out"
      case .remoteConnectionClosed: return "the connection was closed"
      default: return client.description
      }
    }
    return String(describing: error)
  }
}
