import CNetMonitor
import Foundation
import Glibc
import Testing
import TestSupport

@testable import NetMonitor

/// `TLSOnTheWire` on real hellos: a ClientHello `openssl s_client` sends to a socket of the test's,
/// and the ServerHellos `openssl s_server` answers it with, forced to TLS 1.2 and to TLS 1.3.
@Suite("TLS hellos read on the wire", .serialized)
struct TLSOnTheWireTests {
  /// One TLS record read from `fd`: its 5-byte header and its body.
  static func readRecord(_ fd: Int32) throws -> [UInt8] {
    var record: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 16_384)
    while record.count < 5 || record.count < 5 + (Int(record[3]) << 8 | Int(record[4])) {
      let count = recv(fd, &buffer, buffer.count, 0)
      guard count > 0 else { throw Sockets.Failure(call: "recv", code: errno) }
      record += buffer[0..<count]
    }
    return Array(record[0..<(5 + (Int(record[3]) << 8 | Int(record[4])))])
  }

  /// The openssl command, started with no input and its output discarded.
  static func openssl(_ arguments: [String]) throws -> Process {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
    process.arguments = arguments
    process.standardInput = FileHandle.nullDevice
    process.standardOutput = FileHandle.nullDevice
    process.standardError = FileHandle.nullDevice
    try process.run()
    return process
  }

  /// The ClientHello of `openssl s_client -servername NAME`, read by a listener of the test's own.
  static func clientHello(serverName: String) throws -> [UInt8] {
    let port = try LoopbackNginx.freePort()
    let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    defer { close(listener) }
    var address = Sockets.address(port)
    var one: Int32 = 1
    setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
    let bound = withUnsafePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
    try #require(bound == 0 && listen(listener, 1) == 0)
    let client = try openssl(["s_client", "-connect", "127.0.0.1:\(port)", "-servername", serverName])
    defer {
      client.terminate()
      client.waitUntilExit()
    }
    let connection = accept(listener, nil, nil)
    try #require(connection >= 0)
    defer { close(connection) }
    return try readRecord(connection)
  }

  /// The ServerHello `openssl s_server` (`version`: -tls1_2 or -tls1_3) answers `hello` with.
  static func serverHello(answering hello: [UInt8], version: String) throws -> [UInt8] {
    let directory = try TemporaryDirectory("tls-wire", inSharedMemory: false).url
    defer { try? FileManager.default.removeItem(at: directory) }
    let tls = try LoopbackServer.makeCertificate(in: directory)
    let port = try LoopbackNginx.freePort()
    let server = try openssl([
      "s_server", "-accept", "127.0.0.1:\(port)", "-cert", tls.certificate, "-key", tls.key, version, "-naccept", "1",
      "-quiet",
    ])
    defer {
      server.terminate()
      server.waitUntilExit()
    }
    var fd: Int32 = -1
    for _ in 0..<200 where fd < 0 {
      fd = (try? Sockets.connect(port)) ?? -1
      if fd < 0 { usleep(20_000) }
    }
    try #require(fd >= 0, "openssl s_server did not start")
    defer { close(fd) }
    try hello.withUnsafeBytes { bytes in
      guard send(fd, bytes.baseAddress, bytes.count, 0) == bytes.count else { throw Sockets.Failure(call: "send", code: errno) }
    }
    return try readRecord(fd)
  }

  @Test("a ClientHello's server name; the version a ServerHello chooses, whole or after its record header")
  func hellos() throws {
    let hello = try Self.clientHello(serverName: "sni.example.test")
    try hello.withUnsafeBytes { bytes in
      guard case .client(let name)? = TLSOnTheWire.hello(bytes) else {
        Issue.record("not read as a ClientHello: \(hello.prefix(16))")
        return
      }
      let serverName = try #require(name)
      #expect(String(decoding: serverName, as: UTF8.self) == "sni.example.test")
    }
    for (flag, expected) in [("-tls1_2", "TLSv1.2"), ("-tls1_3", "TLSv1.3")] {
      let answer = try Self.serverHello(answering: hello, version: flag)
      for afterHeader in [false, true] {
        answer.withUnsafeBytes { bytes in
          let given = afterHeader ? UnsafeRawBufferPointer(rebasing: bytes[5...]) : bytes
          guard case .server(let version)? = TLSOnTheWire.hello(given, afterRecordHeader: afterHeader) else {
            Issue.record("\(flag): not read as a ServerHello: \(answer.prefix(16))")
            return
          }
          #expect(version.description == expected, "\(flag), after the header: \(afterHeader)")
        }
      }
    }
  }

  @Test("every prefix of a ClientHello is read within its bytes; HTTP is no hello")
  func truncated() throws {
    let hello = try Self.clientHello(serverName: "sni.example.test")
    var named = 0
    for length in 0...hello.count {
      hello.withUnsafeBytes { bytes in
        if case .client(let name)? = TLSOnTheWire.hello(UnsafeRawBufferPointer(rebasing: bytes[0..<length])), let name {
          #expect(String(decoding: name, as: UTF8.self) == "sni.example.test")
          named += 1
        }
      }
    }
    #expect(named > 0 && named < hello.count, "the name is read once its extension is whole, not before")
    Array("GET / HTTP/1.1\r\n\r\n".utf8).withUnsafeBytes { #expect(TLSOnTheWire.hello($0) == nil) }
  }

  @Test("OpenSSL linked into a stripped C program: its connection has the TLS version, and the summary says its TLS is not read")
  func unhookedClient() throws {
    let (elfhook, _) = try InjectionTests.products()
    let scratch = try TemporaryDirectory("injection")
    defer { scratch.remove() }
    // Stripped, its OpenSSL functions are in no symbol table: no hook reaches them.
    let client = try TLSStackTests.staticTLSClient(in: scratch, stripped: true)
    let tls = try LoopbackServer.makeCertificate(in: scratch.url)
    let server = try LoopbackServer(tls: tls)
    let output = scratch.file("records.jsonl")
    let run = try ProgramRun.run([
      elfhook, "run", "--output", output.path, "--", client.path, "\(server.port)", "/bytes/5000", tls.certificate,
    ])
    #expect(run.status == 0, "\(run.stderr)")
    let connections = InjectionTests.connectionRecords(try InjectionTests.records(in: output), port: server.port)
    #expect(connections.count == 1)
    #expect(connections.first?.tlsVersion == "TLSv1.2" || connections.first?.tlsVersion == "TLSv1.3")
    #expect(connections.first?.host == "localhost", "the ClientHello's server name")
    #expect(connections.first?.tlsBytesSent == nil && (connections.first?.bytesReceived ?? 0) > 5000)
    #expect(run.stderr.contains("1 connection used TLS that elfhook cannot read"), "\(run.stderr)")
  }
}
