import CNetMonitor  // SOCK_*: sys/socket.h may belong to CNetMonitor's module when it is loaded first
import Foundation
import Glibc

/// nginx (Debian's /usr/sbin/nginx) serving a directory on 127.0.0.1, plain and TLS, in the
/// foreground, for as long as the value lives.
final class LoopbackNginx {
  let port: UInt16
  let tlsPort: UInt16
  /// Cleartext HTTP/2 with prior knowledge (when `http2`).
  let h2cPort: UInt16
  let root: URL
  private let prefix: URL
  private let process: Process

  /// Serves `files` (name → size in bytes) with the certificate `tls`; over TLS, HTTP/2 too when
  /// `http2` (chosen by ALPN when the client offers it), and cleartext HTTP/2 on `h2cPort`.
  /// `launcher` runs nginx (`elfhook run --output F --`): then ``stop()`` ends it.
  init(files: [String: Int], tls: (certificate: String, key: String), http2: Bool = false, launcher: [String] = [])
    throws
  {
    prefix = FileManager.default.temporaryDirectory.appendingPathComponent("netmonitor-nginx-" + UUID().uuidString)
    root = prefix.appendingPathComponent("www")
    try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
    for (name, size) in files {
      try Data(repeating: UInt8(ascii: "n"), count: size).write(to: root.appendingPathComponent(name))
    }
    port = try Self.freePort()
    tlsPort = try Self.freePort()
    h2cPort = try Self.freePort()
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
        \(http2 ? "server { listen 127.0.0.1:\(h2cPort) http2; root \(root.path); }" : "")
      }
      """
    let file = prefix.appendingPathComponent("nginx.conf")
    try configuration.write(to: file, atomically: true, encoding: .utf8)
    process = Process()
    let command = launcher + ["/usr/sbin/nginx", "-p", prefix.path, "-c", file.path, "-e", prefix.path + "/error.log"]
    process.executableURL = URL(fileURLWithPath: command[0])
    process.arguments = Array(command.dropFirst())
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
    stop()
    try? FileManager.default.removeItem(at: prefix)
  }

  /// Ends nginx (and its launcher, which then finishes: `elfhook run` writes its last records).
  /// nginx without a master process does not always leave on SIGTERM: a test server has no state
  /// worth a graceful shutdown.
  func stop() {
    if let text = try? String(contentsOfFile: prefix.path + "/nginx.pid", encoding: .utf8),
      let pid = Int32(text.trimmingCharacters(in: .whitespacesAndNewlines))
    {
      kill(pid, SIGKILL)
    }
    let deadline = Date().addingTimeInterval(5)
    while process.isRunning && Date() < deadline { usleep(10_000) }
    if process.isRunning { kill(process.processIdentifier, SIGKILL) }
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
