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

  /// A name other than "localhost" (which libcurl resolves by itself, without getaddrinfo) that
  /// this machine resolves to 127.0.0.1: its host name, as /etc/hosts usually maps it. nil if none.
  static let resolvableName: String? = {
    var buffer = [CChar](repeating: 0, count: 256)
    guard gethostname(&buffer, buffer.count) == 0 else { return nil }
    let name = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    var hints = addrinfo()
    hints.ai_family = AF_INET
    var answers: UnsafeMutablePointer<addrinfo>?
    guard getaddrinfo(name, nil, &hints, &answers) == 0 else { return nil }
    defer { freeaddrinfo(answers) }
    var answer = answers
    while let current = answer {
      let address = current.pointee.ai_addr.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { $0.pointee.sin_addr.s_addr }
      if address == UInt32(0x7f00_0001).bigEndian { return name }
      answer = current.pointee.ai_next
    }
    return nil
  }()

  struct ServerError: Error, CustomStringConvertible {
    var message: String
    var description: String { message }
  }

  /// A self-signed certificate for 127.0.0.1, localhost and `names`, made with the openssl command.
  static func makeCertificate(in directory: URL, names: [String] = []) throws -> (certificate: String, key: String) {
    let certificate = directory.appendingPathComponent("cert.pem").path
    let key = directory.appendingPathComponent("key.pem").path
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
    process.arguments = [
      "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=localhost",
      "-addext", "subjectAltName=" + (["DNS:localhost", "IP:127.0.0.1"] + names.map { "DNS:" + $0 }).joined(separator: ","), "-keyout", key, "-out", certificate,
    ]
    process.standardOutput = FileHandle.nullDevice
    process.standardError = FileHandle.nullDevice
    try process.run()
    process.waitUntilExit()
    guard process.terminationStatus == 0 else { throw ServerError(message: "openssl req failed") }
    return (certificate, key)
  }
}
