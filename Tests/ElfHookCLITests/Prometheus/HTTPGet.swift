import Foundation
import Glibc

/// A plain HTTP/1.0 GET over a socket to 127.0.0.1: enough to scrape the endpoint and to ask
/// Prometheus's API, with nothing between the test and the bytes.
struct HTTPGet {
  var status: Int
  var headers: [String: String]
  var body: String

  struct Failure: Error, CustomStringConvertible {
    var description: String
  }

  /// `GET path` on 127.0.0.1:`port`; `method` for the odd test of another one.
  static func fetch(port: Int, path: String, method: String = "GET") throws -> HTTPGet {
    let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard descriptor >= 0 else { throw Failure(description: "socket: \(String(cString: strerror(errno)))") }
    defer { close(descriptor) }
    var timeout = timeval(tv_sec: 10, tv_usec: 0)
    setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = in_port_t(UInt16(port).bigEndian)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    let connected = withUnsafePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
      }
    }
    guard connected == 0 else {
      throw Failure(description: "connect 127.0.0.1:\(port): \(String(cString: strerror(errno)))")
    }
    let request = Array("\(method) \(path) HTTP/1.0\r\nHost: 127.0.0.1:\(port)\r\n\r\n".utf8)
    guard send(descriptor, request, request.count, 0) == request.count else {
      throw Failure(description: "send: \(String(cString: strerror(errno)))")
    }
    var response: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 65_536)
    while true {
      let count = recv(descriptor, &buffer, buffer.count, 0)
      if count < 0 && errno == EINTR { continue }
      guard count >= 0 else { throw Failure(description: "recv: \(String(cString: strerror(errno)))") }
      if count == 0 { break }
      response += buffer[..<count]
    }
    let text = String(decoding: response, as: UTF8.self)
    guard let split = text.range(of: "\r\n\r\n") else { throw Failure(description: "no response head: \(text)") }
    let lines = text[..<split.lowerBound].components(separatedBy: "\r\n")
    let statusLine = lines[0].split(separator: " ")
    guard statusLine.count >= 2, let status = Int(statusLine[1]) else {
      throw Failure(description: "bad status line: \(lines[0])")
    }
    var headers: [String: String] = [:]
    for line in lines.dropFirst() {
      guard let colon = line.firstIndex(of: ":") else { continue }
      headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
    }
    return HTTPGet(status: status, headers: headers, body: String(text[split.upperBound...]))
  }

  /// A TCP port nobody listens on now (bound to port 0, read back, released).
  static func freePort() throws -> Int {
    let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    defer { close(descriptor) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        bind(descriptor, $0, length) == 0 && getsockname(descriptor, $0, &length) == 0
      }
    }
    guard bound else { throw Failure(description: "no free port: \(String(cString: strerror(errno)))") }
    return Int(UInt16(bigEndian: address.sin_port))
  }
}
