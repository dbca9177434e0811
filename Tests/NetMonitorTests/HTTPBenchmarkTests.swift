import Glibc
import Testing

@testable import NetMonitor

/// Throughput of the parser, printed, never asserted. Runs only with `HTTP_BENCH=1`, in a release build:
///
///     HTTP_BENCH=1 swift test -c release -Xswiftc -enable-testing --filter HTTPBenchmark
@Suite("HTTP benchmark", .enabled(if: getenv("HTTP_BENCH") != nil))
struct HTTPBenchmarkTests {
  /// Feeds `stream` in `fragment`-sized pieces `rounds` times; returns bytes per second and messages.
  static func measure(
    _ stream: [UInt8], kind: HTTPDirectionKind, fragment: Int, rounds: Int
  ) -> (bytesPerSecond: Double, messages: Int) {
    var messages = 0
    let start = Self.now()
    stream.withUnsafeBytes { raw in
      for _ in 0..<rounds {
        var parser = HTTPStreamParser()
        var offset = 0
        while offset < raw.count {
          let end = min(offset + fragment, raw.count)
          parser.feed(UnsafeRawBufferPointer(rebasing: raw[offset..<end]), as: kind) { event, _ in
            if case .messageComplete = event { messages &+= 1 }
          }
          offset = end
        }
      }
    }
    let seconds = Double(Self.now() - start) / 1e9
    return (Double(stream.count * rounds) / seconds, messages)
  }

  static func now() -> UInt64 {
    var time = timespec()
    clock_gettime(CLOCK_MONOTONIC, &time)
    return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
  }

  static func report(_ name: String, _ result: (bytesPerSecond: Double, messages: Int)) {
    let megabytes = (result.bytesPerSecond / 1e6 * 10).rounded() / 10
    print("HTTP benchmark: \(name): \(megabytes) MB/s (\(result.messages) messages)")
  }

  @Test("keep-alive stream of small responses")
  func smallResponses() {
    let response =
      "HTTP/1.1 200 OK\r\nDate: Mon, 27 Jul 2009 12:28:53 GMT\r\nServer: bench\r\n"
      + "Content-Type: application/json\r\nContent-Length: 27\r\nConnection: keep-alive\r\n\r\n"
      + "{\"ok\":true,\"items\":[1,2,3]}"
    let stream = Array(String(repeating: response, count: 10_000).utf8)
    Self.report("small responses (\(response.utf8.count) B each), 16 KiB reads",
      Self.measure(stream, kind: .responses, fragment: 16 * 1024, rounds: 20))
    let request = "GET /api/items?page=2 HTTP/1.1\r\nHost: api.example.com\r\nUser-Agent: bench/1.0\r\nAccept: */*\r\n\r\n"
    let requests = Array(String(repeating: request, count: 10_000).utf8)
    Self.report("small requests (\(request.utf8.count) B each), 16 KiB reads",
      Self.measure(requests, kind: .requests, fragment: 16 * 1024, rounds: 20))
  }

  @Test("one large Content-Length body")
  func largeBody() {
    let size = 64 * 1024 * 1024
    var stream = Array("HTTP/1.1 200 OK\r\nContent-Length: \(size)\r\n\r\n".utf8)
    stream += [UInt8](repeating: 0x61, count: size)
    Self.report("64 MiB Content-Length body, 16 KiB reads",
      Self.measure(stream, kind: .responses, fragment: 16 * 1024, rounds: 5))
    var chunked = Array("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n".utf8)
    let chunk = Array("4000\r\n".utf8) + [UInt8](repeating: 0x62, count: 0x4000) + Array("\r\n".utf8)
    for _ in 0..<(size / 0x4000) { chunked += chunk }
    chunked += Array("0\r\n\r\n".utf8)
    Self.report("64 MiB chunked body (16 KiB chunks), 16 KiB reads",
      Self.measure(chunked, kind: .responses, fragment: 16 * 1024, rounds: 5))
  }
}
