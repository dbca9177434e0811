import Foundation

/// The Python loopback HTTP/1.1 server of `loopback_server.py`, on 127.0.0.1 and a free port,
/// for as long as the value lives (bounded by the script's own lifetime too).
final class LoopbackServer {
  let port: UInt16
  private let process: Process
  private let input: Pipe

  /// Starts the server (`tls`: certificate and key paths for HTTPS).
  init(tls: (certificate: String, key: String)? = nil) throws {
    let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("loopback_server.py")
    process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = ["python3", script.path] + (tls.map { ["--tls", $0.certificate, $0.key] } ?? [])
    input = Pipe()
    let output = Pipe()
    process.standardInput = input
    process.standardOutput = output
    process.standardError = FileHandle.nullDevice
    try process.run()
    var line = Data()
    while !line.contains(UInt8(ascii: "\n")) {
      let chunk = output.fileHandleForReading.availableData
      if chunk.isEmpty { break }
      line.append(chunk)
    }
    let text = String(decoding: line, as: UTF8.self)
    guard text.hasPrefix("PORT "), let port = UInt16(text.dropFirst(5).trimmingCharacters(in: .whitespacesAndNewlines))
    else {
      process.terminate()
      throw ServerError(message: "loopback server did not start: \(text)")
    }
    self.port = port
  }

  deinit {
    try? input.fileHandleForWriting.close()
    process.terminate()
    process.waitUntilExit()
  }

  struct ServerError: Error, CustomStringConvertible {
    var message: String
    var description: String { message }
  }

  /// A self-signed certificate for 127.0.0.1 / localhost, made with the openssl command.
  static func makeCertificate(in directory: URL) throws -> (certificate: String, key: String) {
    let certificate = directory.appendingPathComponent("cert.pem").path
    let key = directory.appendingPathComponent("key.pem").path
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
    process.arguments = [
      "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=localhost",
      "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1", "-keyout", key, "-out", certificate,
    ]
    process.standardOutput = FileHandle.nullDevice
    process.standardError = FileHandle.nullDevice
    try process.run()
    process.waitUntilExit()
    guard process.terminationStatus == 0 else { throw ServerError(message: "openssl req failed") }
    return (certificate, key)
  }
}
