import CNetMonitor  // SOCK_*: sys/socket.h may belong to CNetMonitor's module when it is loaded first
import Foundation
import Glibc

/// nginx (Debian's /usr/sbin/nginx) serving a directory on 127.0.0.1, plain and TLS, in the
/// foreground, for as long as the value lives.
final class LoopbackNginx {
  let port: UInt16
  let tlsPort: UInt16
  let root: URL
  private let process: Process

  /// Serves `files` (name → size in bytes) with the certificate `tls`; over TLS, HTTP/2 too when
  /// `http2` (chosen by ALPN when the client offers it).
  init(files: [String: Int], tls: (certificate: String, key: String), http2: Bool = false) throws {
    let prefix = FileManager.default.temporaryDirectory.appendingPathComponent("netmonitor-nginx-" + UUID().uuidString)
    root = prefix.appendingPathComponent("www")
    try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
    for (name, size) in files {
      try Data(repeating: UInt8(ascii: "n"), count: size).write(to: root.appendingPathComponent(name))
    }
    port = try Self.freePort()
    tlsPort = try Self.freePort()
    let configuration = """
      daemon off;
      master_process off;
      worker_processes 1;
      pid \(prefix.path)/nginx.pid;
      error_log \(prefix.path)/error.log;
      events { worker_connections 64; }
      http {
        access_log off;
        client_body_temp_path \(prefix.path)/body;
        server { listen 127.0.0.1:\(port); root \(root.path); }
        server {
          listen 127.0.0.1:\(tlsPort) ssl\(http2 ? " http2" : "");
          ssl_certificate \(tls.certificate);
          ssl_certificate_key \(tls.key);
          root \(root.path);
        }
      }
      """
    let file = prefix.appendingPathComponent("nginx.conf")
    try configuration.write(to: file, atomically: true, encoding: .utf8)
    process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/sbin/nginx")
    process.arguments = ["-p", prefix.path, "-c", file.path, "-e", prefix.path + "/error.log"]
    process.standardOutput = FileHandle.nullDevice
    process.standardError = FileHandle.nullDevice
    try process.run()
    for _ in 0..<200 {  // wait until it listens (at most 2 s)
      if let fd = try? Sockets.connect(port) {
        close(fd)
        return
      }
      usleep(10_000)
    }
    process.terminate()
    throw LoopbackServer.ServerError(message: "nginx did not start: \((try? String(contentsOfFile: prefix.path + "/error.log", encoding: .utf8)) ?? "")")
  }

  deinit {
    // nginx without a master process does not always leave on SIGTERM: a test server has no state
    // worth a graceful shutdown.
    kill(process.processIdentifier, SIGKILL)
    process.waitUntilExit()
  }

  static var isInstalled: Bool { FileManager.default.isExecutableFile(atPath: "/usr/sbin/nginx") }

  static func freePort() throws -> UInt16 {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    defer { close(fd) }
    var address = Sockets.address(0)
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let result = withUnsafeMutablePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 ? getsockname(fd, $0, &length) : -1 }
    }
    guard result == 0 else { throw LoopbackServer.ServerError(message: "no free port") }
    return UInt16(bigEndian: address.sin_port)
  }
}
