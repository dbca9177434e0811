import Foundation
import Glibc
import Testing
import TestSupport

@testable import NetMonitor

/// Real libcurl (with OpenSSL) in this process, loaded by dlopen after the monitor started; its own
/// timing and size accounts (curl_easy_getinfo) against the records.
@Suite("libcurl in-process", .serialized)
struct LibcurlInProcessTests {
  typealias Fetch = @convention(c) (UnsafePointer<CChar>, UnsafePointer<CChar>?, UnsafeMutablePointer<Double>) -> Int32

  /// libcurlfetch.so, built once from Support/curl_fetch.c and dlopen'ed.
  static let fetch: Result<Fetch, Error> = Result {
    _ = SharedMonitor.sink  // the monitor is in place before libcurl arrives
    let directory = try TemporaryDirectory("netmonitor-curl", inSharedMemory: false).url
    defer { try? FileManager.default.removeItem(at: directory) }  // the mapping outlives the file
    let source = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Support/curl_fetch.c")
    let library = directory.appendingPathComponent("libcurlfetch.so").path
    let compile = Process()
    compile.executableURL = URL(fileURLWithPath: "/usr/bin/cc")
    compile.arguments = ["-shared", "-fPIC", "-Wall", "-Werror", source.path, "-lcurl", "-o", library]
    try compile.run()
    compile.waitUntilExit()
    guard compile.terminationStatus == 0 else { throw CurlError(message: "cc curl_fetch.c failed (libcurl4-openssl-dev missing?)") }
    guard let handle = dlopen(library, RTLD_NOW), let symbol = dlsym(handle, "fetch") else {
      throw CurlError(message: "dlopen: \(String(cString: dlerror()))")
    }
    return unsafeBitCast(symbol, to: Fetch.self)
  }

  struct CurlError: Error, CustomStringConvertible {
    var message: String
    var description: String { message }
  }

  /// Times in milliseconds agree within this margin (both clocks read the same events a few
  /// function calls apart, on a loaded 2-core VM).
  static let margin = 5.0

  @Test("a failed TLS handshake (HTTPS to a plain HTTP server) is a connection record with its SSL error")
  func failedHandshake() throws {
    let fetch = try Self.fetch.get()
    let server = try LoopbackServer()
    var curl = [Double](repeating: 0, count: 10)
    let (code, records) = SharedMonitor.records { () -> Int32 in
      "https://127.0.0.1:\(server.port)/bytes/10".withCString { fetch($0, nil, &curl) }
    }
    #expect(code != 0)
    let connection = try #require(records.connections.first { $0.peerPort == server.port })
    #expect(connection.error?.call == "SSL_do_handshake")
    #expect(connection.error?.code.hasPrefix("SSL_ERROR_") == true)
    #expect(connection.tlsVersion == nil)
  }

  /// The same against nginx, plain and TLS (its static files: Content-Length bodies).
  @Test("libcurl against nginx: phases and sizes agree with curl's own", arguments: [false, true])
  func nginx(_ secure: Bool) throws {
    try #require(LoopbackNginx.isInstalled, "nginx is not installed (scripts/install-dependencies installs it)")
    let fetch = try Self.fetch.get()
    let directory = try TemporaryDirectory("netmonitor-tls", inSharedMemory: false).url
    defer { try? FileManager.default.removeItem(at: directory) }
    let name = LoopbackServer.resolvableName ?? "localhost"
    let tls = try LoopbackServer.makeCertificate(in: directory, names: [name])
    let server = try LoopbackNginx(files: ["page.html": 1024, "large.bin": 300_000], tls: tls)
    for file in ["page.html", "large.bin"] {
      let port = secure ? server.tlsPort : server.port
      let url = "\(secure ? "https" : "http")://\(name):\(port)/\(file)?token=t0k3n"
      try fetchAndCompare(
        fetch, url: url, certificate: tls.certificate, port: port, name: name, secure: secure,
        target: "/\(file)?token=REDACTED")
    }
  }

  @Test("HTTPS through libcurl: method, target, status; phases and sizes agree with curl's own", arguments: [false, true])
  func https(_ secure: Bool) throws {
    let fetch = try Self.fetch.get()
    let directory = try TemporaryDirectory("netmonitor-tls", inSharedMemory: false).url
    defer { try? FileManager.default.removeItem(at: directory) }
    let name = LoopbackServer.resolvableName ?? "localhost"
    let tls = secure ? try LoopbackServer.makeCertificate(in: directory, names: [name]) : nil
    let server = try LoopbackServer(tls: tls)
    let url = "\(secure ? "https" : "http")://\(name):\(server.port)/bytes/20000?key=s3cret"
    try fetchAndCompare(
      fetch, url: url, certificate: tls?.certificate, port: server.port, name: name, secure: secure,
      target: "/bytes/20000?key=REDACTED")
  }

  /// Fetches `url` with libcurl and compares the records with curl's own account: everything but
  /// the phase times on every attempt; the phase times must agree within ``margin`` on at least one
  /// of three attempts (a 2-core VM running other tests can stall either clock's reader for a few
  /// milliseconds between an event and its observation).
  private func fetchAndCompare(
    _ fetch: Fetch, url: String, certificate: String?, port: UInt16, name: String, secure: Bool, target: String
  ) throws {
    var disagreements: [String] = []
    for _ in 0..<3 {
      var curl = [Double](repeating: 0, count: 10)
      let (code, records) = SharedMonitor.records { () -> Int32 in
        url.withCString { url in
          guard let certificate else { return fetch(url, nil, &curl) }
          return certificate.withCString { fetch(url, $0, &curl) }
        }
      }
      #expect(code == 0, "curl error \(code)")
      disagreements = try check(records, port: port, name: name, secure: secure, curl: curl, target: target)
      if disagreements.isEmpty { break }
    }
    #expect(disagreements.isEmpty, "phase times disagree with curl's by more than \(Self.margin) ms: \(disagreements)")
  }

  /// The records of one libcurl transfer against curl's own account of it; returns the phase times
  /// that disagree by more than ``margin``.
  private func check(
    _ records: [Transaction], port: UInt16, name: String, secure: Bool, curl: [Double], target: String
  ) throws -> [String] {
    var disagreements: [String] = []
    let compare = { (phase: String, ours: Double, theirs: Double) in
      if abs(ours - theirs) >= Self.margin { disagreements.append("\(phase) \(ours) vs \(theirs)") }
    }
    let milliseconds = { (index: Int) in curl[index] * 1000 }

    let connection = try #require(records.connections.first { $0.peerPort == port })
    let exchange = try #require(records.http.first { $0.connectionId == connection.id }, "\(records)")
    #expect(exchange.scheme == (secure ? HTTPScheme.https : HTTPScheme.http))
    #expect(exchange.method == "GET")
    #expect(exchange.target == target)
    #expect(exchange.status == Int(curl[0]))
    #expect(exchange.host == "\(name):\(port)")
    #expect(exchange.requestBytes == UInt64(curl[7]))
    #expect(exchange.responseBytes == UInt64(curl[8] + curl[9]))
    let ttfb = try #require(exchange.ttfbMs)
    compare("ttfb", ttfb, milliseconds(5) - milliseconds(4))

    #expect(connection.host == name)
    #expect(connection.peerPort == port)
    if name != "localhost" {  // libcurl answers "localhost" itself: no getaddrinfo to see
      let dns = try #require(connection.dnsMs)
      compare("dns", dns, milliseconds(1))
      #expect(records.dns.contains { $0.host == name && $0.addresses.contains("127.0.0.1") })
    }
    let connect = try #require(connection.connectMs)
    compare("connect", connect, milliseconds(2) - milliseconds(1))
    #expect(connection.httpExchanges == 1)
    // The first exchange carries its connection's setup, so a streaming consumer needs no join.
    #expect(exchange.role == .client && !exchange.reusedConnection)
    #expect(exchange.peerAddress == connection.peerAddress && exchange.peerPort == port)
    #expect(exchange.dnsMs == connection.dnsMs && exchange.connectMs == connection.connectMs)
    #expect(exchange.tlsMs == connection.tlsMs && exchange.tlsVersion == connection.tlsVersion)
    if secure {
      let handshake = try #require(connection.tlsMs)
      compare("tls", handshake, milliseconds(3) - milliseconds(2))
      #expect(connection.tlsVersion?.hasPrefix("TLSv1.") == true)
      #expect(connection.tlsBytesSent == UInt64(curl[7]))
      #expect(connection.tlsBytesReceived == UInt64(curl[8] + curl[9]))
      #expect(connection.bytesReceived > connection.tlsBytesReceived!)
    } else {
      #expect(connection.tlsMs == nil)
      #expect(connection.bytesSent == UInt64(curl[7]))
    }
    return disagreements
  }
}
