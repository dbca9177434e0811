import Foundation
import Glibc
import Testing
import TestSupport

@testable import NetMonitor

/// libElfHookPreload.so is a small C library that loads the monitor at a process's first connect or
/// accept and records the name lookups before it itself (CShims/CElfHookPreload): seen from the
/// processes it is injected into, under `env -i` with a bare LD_PRELOAD.
extension InjectionTests {
  /// Runs python3 `program` injected, recording to rings in `scratch`; returns the run and the
  /// records of every ring, with the pid each ring's header names.
  private static func injectedPython(_ program: String, in scratch: TemporaryDirectory, environment: [String] = [])
    throws -> (run: ProgramRun, rings: [(pid: Int32, records: [Transaction])])
  {
    let (_, library) = try products()
    let run = try ProgramRun.run(
      ["/usr/bin/env", "-i", "LD_PRELOAD=\(library)", "ELFHOOK_OUTPUT=\(scratch.url.path)/%p.ring"] + environment
        + ["/usr/bin/python3", "-c", program])
    let names = try FileManager.default.contentsOfDirectory(atPath: scratch.url.path).filter { $0.contains(".ring") }
    let rings = try names.sorted().map { name in
      let ring = try RecordRing(path: scratch.file(name).path)
      var records: [Transaction] = []
      ring.drain(skippingUnfinished: true) { records.append($0) }
      return (ring.pid, records)
    }
    return (run, rings)
  }

  private static func dnsRecords(_ records: [Transaction]) -> [DNSRecord] {
    records.compactMap { record in if case .dns(let dns) = record { dns } else { nil } }
  }

  @Test("libElfHookPreload.so needs libc alone and exports libc's calls it forwards; the monitor beside it needs no libstdc++ nor libgcc_s")
  func preloadLibraryIsPlainC() throws {
    let (_, library) = try Self.products()
    let dynamic = try ProgramRun.run(["readelf", "-d", library])
    let needed = String(decoding: dynamic.stdout, as: UTF8.self).split(separator: "\n").filter { $0.contains("(NEEDED)") }
    // ld-linux: the engine (the TLS triggers) reads the dynamic linker's list of images; it is
    // in every dynamically linked process anyway.
    #expect(needed.count == 2 && needed.contains { $0.contains("[libc.so.6]") }, "\(needed)")
    #expect(needed.contains { $0.contains("[ld-linux") }, "\(needed)")
    let symbols = try ProgramRun.run(["nm", "-D", "--defined-only", library])
    let exported = String(decoding: symbols.stdout, as: UTF8.self).split(separator: "\n")
      .compactMap { line -> String? in
        let fields = line.split(separator: " ")
        return fields.count == 3 && fields[1] == "T" ? String(fields[2]) : nil
      }
    #expect(
      exported.sorted() == [
        "accept", "accept4", "chroot", "close", "close_range", "closefrom", "connect", "dup2", "dup3", "getaddrinfo",
        "getsockopt", "read", "readv", "recv", "recvfrom", "recvmsg", "send", "sendfile", "sendfile64", "sendmsg",
        "sendto", "seteuid", "setresuid", "setreuid", "setuid", "write", "writev",
      ])
    let monitor = URL(fileURLWithPath: library).deletingLastPathComponent().appendingPathComponent("libElfHookMonitor.so")
    let monitorDynamic = try ProgramRun.run(["readelf", "-d", monitor.path])
    #expect(monitorDynamic.status == 0, "the monitor is built beside it")
    let monitorNeeds = String(decoding: monitorDynamic.stdout, as: UTF8.self).split(separator: "\n")
      .filter { $0.contains("(NEEDED)") }
    #expect(!monitorNeeds.isEmpty && !monitorNeeds.contains { $0.contains("libstdc++") }, "its C++ runtime is inside: \(monitorNeeds)")
    #expect(!monitorNeeds.contains { $0.contains("libgcc_s") }, "its unwinder is inside: \(monitorNeeds)")
  }

  @Test("a lookup is recorded without loading the monitor; the connection, named after it, keeps its name when the monitor takes it over")
  func lookupsBeforeTheMonitor() throws {
    let server = try LoopbackServer()
    let scratch = try TemporaryDirectory("injection")
    defer { scratch.remove() }
    let program = """
      import socket
      def monitor_loaded():
          return "libElfHookMonitor.so" in open("/proc/self/maps").read()
      answers = socket.getaddrinfo("localhost", \(server.port), socket.AF_INET, socket.SOCK_STREAM)
      print("after lookup:", monitor_loaded())
      s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
      s.connect(answers[0][4])
      print("after connect:", monitor_loaded())
      s.sendall(b"GET /bytes/7 HTTP/1.1\\r\\nHost: localhost:\(server.port)\\r\\nConnection: close\\r\\n\\r\\n")
      while s.recv(4096): pass
      s.close()
      """
    let (run, rings) = try Self.injectedPython(program, in: scratch)
    #expect(run.status == 0, "\(run.stderr)")
    // The connect is tracked by the library (light clients); the request's `Connection: close` is
    // no simple exchange, so its send loads the monitor, which takes the connection over.
    #expect(String(decoding: run.stdout, as: UTF8.self) == "after lookup: False\nafter connect: False\n")
    #expect(run.stderr.isEmpty, "\(run.stderr)")
    try #require(rings.count == 1, "one ring: the library's, handed to the monitor")
    let records = rings[0].records
    let lookups = Self.dnsRecords(records).filter { $0.host == "localhost" }
    #expect(lookups.count == 1)
    #expect(lookups.first?.addresses == ["127.0.0.1"])
    #expect(lookups.first?.pid == rings[0].pid)
    let connection = try #require(Self.connectionRecords(records, port: server.port).first)
    #expect(connection.host == "localhost", "the monitor knows the lookup the library made")
    #expect(connection.dnsMs != nil)
    #expect(Self.httpRecords(records, port: server.port).map(\.target) == ["/bytes/7"])
  }

  @Test("a connect to a unix socket is not tracked; an internet one is, and the monitor takes it over")
  func unixSocketsDoNotLoadTheMonitor() throws {
    let server = try LoopbackServer()
    let scratch = try TemporaryDirectory("injection")
    defer { scratch.remove() }
    let program = """
      import socket
      def monitor_loaded():
          return "libElfHookMonitor.so" in open("/proc/self/maps").read()
      listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
      listener.bind("\(scratch.url.path)/local.sock")
      listener.listen(1)
      local = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
      local.connect("\(scratch.url.path)/local.sock")
      peer, _ = listener.accept()
      local.sendall(b"ping")
      print("unix:", peer.recv(4), monitor_loaded())
      s = socket.create_connection(("127.0.0.1", \(server.port)))
      print("after connect:", monitor_loaded())
      s.sendall(b"GET /bytes/3 HTTP/1.1\\r\\nHost: 127.0.0.1:\(server.port)\\r\\nConnection: close\\r\\n\\r\\n")
      while s.recv(4096): pass
      s.close()
      """
    let (run, rings) = try Self.injectedPython(program, in: scratch)
    #expect(run.status == 0, "\(run.stderr)")
    #expect(String(decoding: run.stdout, as: UTF8.self) == "unix: b'ping' False\nafter connect: False\n")
    try #require(rings.count == 1)
    #expect(Self.httpRecords(rings[0].records, port: server.port).map(\.target) == ["/bytes/3"])
  }

  @Test("many lookups and no connection: every one recorded (the ring's blocks are reserved as it fills)")
  func manyLookups() throws {
    let scratch = try TemporaryDirectory("injection")
    defer { scratch.remove() }
    let program = """
      import socket
      for i in range(300):
          socket.getaddrinfo("localhost", 1000 + i, socket.AF_INET, socket.SOCK_STREAM)
      print("maps:", "libElfHookMonitor.so" in open("/proc/self/maps").read())
      """
    let (run, rings) = try Self.injectedPython(program, in: scratch)
    #expect(run.status == 0 && String(decoding: run.stdout, as: UTF8.self) == "maps: False\n", "\(run.stderr)")
    try #require(rings.count == 1)
    #expect(Self.dnsRecords(rings[0].records).filter { $0.host == "localhost" }.count == 300)
  }

  @Test("a child forked before the monitor started records its lookups into a ring of its own")
  func forkBeforeTheMonitor() throws {
    let scratch = try TemporaryDirectory("injection")
    defer { scratch.remove() }
    let program = """
      import os, socket
      socket.getaddrinfo("localhost", 1, socket.AF_INET)
      pid = os.fork()
      if pid == 0:
          socket.getaddrinfo("localhost", 2, socket.AF_INET)
          os._exit(0)
      os.waitpid(pid, 0)
      """
    let (run, rings) = try Self.injectedPython(program, in: scratch)
    #expect(run.status == 0, "\(run.stderr)")
    try #require(rings.count == 2, "\(rings.map(\.pid))")
    for ring in rings {
      let lookups = Self.dnsRecords(ring.records)
      #expect(lookups.count == 1, "each process's own lookup only")
      #expect(lookups.allSatisfy { $0.pid == ring.pid })
    }
  }

  /// Builds and runs, injected, a C program that does `prelude`, connects to `server`, asks for
  /// `target` and prints 1 when an answer came; it closes the connection first only when `closes`.
  /// Returns the run and the records of its ring (none when it made none).
  private static func injectedRequest(
    prelude: String, target: String, closes: Bool, server: LoopbackServer, in scratch: TemporaryDirectory
  ) throws -> (run: ProgramRun, records: [Transaction]) {
    let binary = try compile(
      """
      #include <arpa/inet.h>
      #include <stdio.h>
      #include <string.h>
      #include <sys/socket.h>
      #include <unistd.h>
      extern char **environ;
      int main(void) {
        \(prelude)
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        struct sockaddr_in address = {.sin_family = AF_INET, .sin_port = htons(\(server.port))};
        inet_pton(AF_INET, "127.0.0.1", &address.sin_addr);
        if (connect(fd, (struct sockaddr *)&address, sizeof address) != 0) return 1;
        const char *request = "GET \(target) HTTP/1.1\\r\\nHost: 127.0.0.1:\(server.port)\\r\\n\\r\\n";
        if (write(fd, request, strlen(request)) <= 0) return 1;
        char response[4096];
        printf("%d\\n", read(fd, response, sizeof response) > 0);
        \(closes ? "close(fd);" : "")
        return 0;
      }
      """, named: "request", in: scratch)
    let (_, library) = try products()
    let run = try ProgramRun.run(
      ["/usr/bin/env", "-i", "LD_PRELOAD=\(library)", "ELFHOOK_OUTPUT=\(scratch.url.path)/%p.ring", binary.path])
    var records: [Transaction] = []
    for name in try FileManager.default.contentsOfDirectory(atPath: scratch.url.path) where name.contains(".ring") {
      try RecordRing(path: scratch.file(name).path).drain(skippingUnfinished: true) { records.append($0) }
    }
    return (run, records)
  }

  @Test("a program that writes over its environment (nginx's process title) and exits with a connection open")
  func connectionOpenAtExit() throws {
    let server = try LoopbackServer()
    let scratch = try TemporaryDirectory("injection")
    defer { scratch.remove() }
    let (run, records) = try Self.injectedRequest(
      prelude: "for (char **variable = environ; *variable; variable++) memset(*variable, 'x', strlen(*variable));",
      target: "/bytes/9", closes: false, server: server, in: scratch)
    #expect(run.status == 0 && run.stdout == Data("1\n".utf8), "\(run.stderr)")
    let connection = try #require(Self.connectionRecords(records, port: server.port).first)
    #expect(connection.bytesSent > 0 && connection.bytesReceived > 0)
    #expect(Self.httpRecords(records, port: server.port).map(\.target) == ["/bytes/9"])
  }

  @Test(
    "a process that gives up root or its root directory before its first connection (an nginx worker) is monitored",
    .enabled(if: geteuid() == 0, "needs root, to give it up"))
  func accessLostBeforeTheFirstConnection() throws {
    let server = try LoopbackServer()
    // After setuid, the ring directory (root's alone, as `elfhook run`'s is) cannot be written to;
    // after chroot, neither the directory nor the monitor's file can be reached.
    for call in ["setuid(65534)", "chroot(\"/var/empty-elfhook-test\")"] {
      let scratch = try TemporaryDirectory("injection")
      defer { scratch.remove() }
      try FileManager.default.createDirectory(atPath: "/var/empty-elfhook-test", withIntermediateDirectories: true)
      defer { try? FileManager.default.removeItem(atPath: "/var/empty-elfhook-test") }
      let (run, records) = try Self.injectedRequest(
        prelude: "if (\(call) != 0) return 2;", target: "/bytes/4", closes: true, server: server, in: scratch)
      #expect(run.status == 0 && run.stdout == Data("1\n".utf8), "\(call): \(run.stderr)")
      #expect(run.stderr.isEmpty, "\(call): \(run.stderr)")
      #expect(Self.httpRecords(records, port: server.port).map(\.target) == ["/bytes/4"], "\(call)")
      #expect(Self.connectionRecords(records, port: server.port).count == 1, "\(call)")
    }
  }

  @Test("ELFHOOK_DISABLE=1, or a bad variable: a program that looks up and connects runs unharmed, unrecorded")
  func unmonitoredProgramsStillConnect() throws {
    let server = try LoopbackServer()
    let program = """
      import http.client
      c = http.client.HTTPConnection("localhost", \(server.port))
      c.request("GET", "/bytes/3")
      print(len(c.getresponse().read()))
      """
    for setting in [["ELFHOOK_DISABLE=1"], ["ELFHOOK_LOG=off", "ELFHOOK_BUFFER_RECORDS=3"]] {
      let scratch = try TemporaryDirectory("injection")
      defer { scratch.remove() }
      let (run, rings) = try Self.injectedPython(program, in: scratch, environment: setting)
      #expect(run.status == 0, "\(setting): \(run.stderr)")
      #expect(String(decoding: run.stdout, as: UTF8.self) == "3\n", "\(setting)")
      #expect(run.stderr.isEmpty, "\(setting): \(run.stderr)")
      #expect(rings.isEmpty, "\(setting)")
    }
  }
}
