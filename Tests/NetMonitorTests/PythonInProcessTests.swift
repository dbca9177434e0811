import Foundation
import Glibc
import Testing
import TestSupport

@preconcurrency import CNetMonitor
@testable import NetMonitor

/// CPython embedded in this process (libpython dlopen'ed after the monitor started): its `_socket`,
/// `_ssl`, libssl and libcrypto all arrive by dlopen, as in a python3 process. urllib fetches over
/// HTTPS from the loopback server.
@Suite("Python urllib in-process", .serialized)
struct PythonInProcessTests {
  typealias RunString = @convention(c) (UnsafePointer<CChar>) -> Int32

  /// libpython, found through the python3 on PATH (its sys.prefix and INSTSONAME), initialized once.
  static let run: Result<RunString, Error> = Result {
    _ = SharedMonitor.sink
    let probe = Process()
    probe.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    probe.arguments = [
      "python3", "-c",
      "import sys, sysconfig; print(sys.prefix); print(sysconfig.get_config_var('LIBDIR') + '/' + sysconfig.get_config_var('INSTSONAME'))",
    ]
    let output = Pipe()
    probe.standardOutput = output
    try probe.run()
    probe.waitUntilExit()
    let lines = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self).split(separator: "\n")
    guard lines.count == 2, let library = dlopen(String(lines[1]), RTLD_NOW | RTLD_GLOBAL) else {
      throw PythonError(message: "no shared libpython for python3 (\(lines))")
    }
    setenv("PYTHONHOME", String(lines[0]), 1)
    typealias Initialize = @convention(c) (Int32) -> Void
    guard let initialize = dlsym(library, "Py_InitializeEx"), let run = dlsym(library, "PyRun_SimpleString") else {
      throw PythonError(message: "libpython lacks Py_InitializeEx")
    }
    unsafeBitCast(initialize, to: Initialize.self)(0)  // 0: leave the process's signal handlers alone
    return unsafeBitCast(run, to: RunString.self)
  }

  struct PythonError: Error, CustomStringConvertible {
    var message: String
    var description: String { message }
  }

  @Test("urllib over HTTPS: method, target, status, TLS phase and plaintext sizes")
  func urllib() throws {
    let run = try Self.run.get()
    let directory = try TemporaryDirectory("netmonitor-py", inSharedMemory: false).url
    defer { try? FileManager.default.removeItem(at: directory) }
    let tls = try LoopbackServer.makeCertificate(in: directory)
    let server = try LoopbackServer(tls: tls)
    let result = directory.appendingPathComponent("result").path
    let script = """
      import ssl, urllib.request
      context = ssl.create_default_context(cafile=\"\(tls.certificate)\")
      with urllib.request.urlopen("https://127.0.0.1:\(server.port)/bytes/4321?sig=abc", context=context) as response:
          body = response.read()
          open(\"\(result)\", "w").write(f"{response.status} {len(body)}")
      """
    let (status, records) = SharedMonitor.records { script.withCString { run($0) } }
    #expect(status == 0)
    #expect((try? String(contentsOfFile: result, encoding: .utf8)) == "200 4321")
    let connection = try #require(records.connections.first { $0.peerPort == server.port })
    let exchange = try #require(records.http.first { $0.connectionId == connection.id })
    #expect(exchange.scheme == .https)
    #expect(exchange.method == "GET")
    #expect(exchange.target == "/bytes/4321?sig=REDACTED")
    #expect(exchange.status == 200)
    #expect(connection.tlsMs != nil)
    #expect(connection.tlsVersion?.hasPrefix("TLSv1.") == true)
    #expect(connection.tlsBytesSent == exchange.requestBytes)
    #expect(connection.tlsBytesReceived == exchange.responseBytes)
    #expect(connection.httpExchanges == 1)
  }

  /// A TLS connection's plaintext comes from the SSL hooks, and its socket's bytes (ciphertext) are
  /// not read: the hooks must not take the path that prefetches an exchange's lines for them
  /// (`CNM_EXCHANGING` is for plaintext connections whose two directions are parsed).
  @Test("a TLS connection stays tracked, not exchanging, across its exchanges (its plaintext comes from the SSL hooks)")
  func tlsConnectionState() throws {
    let run = try Self.run.get()
    let directory = try TemporaryDirectory("netmonitor-py", inSharedMemory: false).url
    defer { try? FileManager.default.removeItem(at: directory) }
    let tls = try LoopbackServer.makeCertificate(in: directory)
    let server = try LoopbackServer(tls: tls)
    let descriptorFile = directory.appendingPathComponent("fd").path
    // The connection stays open between the scripts (their globals persist in __main__), so that
    // its table byte can be read after each exchange.
    let open = """
      import ssl, http.client
      tls_context = ssl.create_default_context(cafile=\"\(tls.certificate)\")
      tls_connection = http.client.HTTPSConnection("127.0.0.1", \(server.port), context=tls_context)
      tls_connection.connect()
      open(\"\(descriptorFile)\", "w").write(str(tls_connection.sock.fileno()))
      """
    let exchange = """
      tls_connection.request("GET", "/bytes/300")
      tls_body = tls_connection.getresponse().read()
      assert len(tls_body) == 300, len(tls_body)
      """
    var states: [UInt8] = []
    let (statuses, records) = SharedMonitor.records { () -> [Int32] in
      var statuses = [open.withCString { run($0) }]
      let fd = (try? String(contentsOfFile: descriptorFile, encoding: .utf8)).flatMap { Int($0) } ?? -1
      guard fd >= 0 && fd < Int(cnm_capacity) else { return statuses }
      states.append(cnm_tracked.unsafelyUnwrapped[fd])
      for _ in 0..<2 {
        statuses.append(exchange.withCString { run($0) })
        states.append(cnm_tracked.unsafelyUnwrapped[fd])
      }
      statuses.append("tls_connection.close()".withCString { run($0) })
      return statuses
    }
    #expect(statuses == [0, 0, 0, 0])
    #expect(states == [UInt8(CNM_TRACKED), UInt8(CNM_TRACKED), UInt8(CNM_TRACKED)])
    let connection = try #require(records.connections.first { $0.peerPort == server.port })
    #expect(connection.tlsVersion?.hasPrefix("TLSv1.") == true)
    let exchanges = records.http.filter { $0.connectionId == connection.id }
    #expect(exchanges.map(\.scheme) == [.https, .https])
    #expect(exchanges.map(\.status) == [200, 200])
    #expect(exchanges.map(\.reusedConnection) == [false, true])
  }
}
