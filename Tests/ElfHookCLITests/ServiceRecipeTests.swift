import Foundation
import NetMonitor
import Testing
import TestSupport

@testable import ElfHookCLI

/// The recipe for a long-running service (docs/injection-and-rings.md, "Watching a service"), run
/// here under a shell supervisor: this machine's PID 1 is not systemd, so the loop below stands in for
/// `Restart=always`, and starts the service with exactly the drop-in's environment
/// (examples/systemd/elfhook.conf: LD_PRELOAD and ELFHOOK_OUTPUT=/dev/shm/…/%p.ring), while
/// `elfhook export --jsonl FILE --follow --state DIR RINGDIR` runs beside it as the exporter unit
/// does (examples/systemd/elfhook-export.service).
@Suite("the service recipe", .serialized)
struct ServiceRecipeTests {
  /// The bundle's files when scripts/package built it, else the debug build's.
  private static func products() throws -> (elfhook: String, library: String) {
    if let elfhook = ReleaseBundle.elfhook, let library = ReleaseBundle.preloadLibrary { return (elfhook, library) }
    let elfhook = try #require(BuiltProducts.elfhook, Comment(rawValue: BuiltProducts.missingMessage))
    return (elfhook, try #require(BuiltProducts.preloadLibrary))
  }

  /// A forking HTTP server (each request served by a child process, as a pre-fork or CGI-style
  /// service does): every child records into a ring of its own, which dies with it.
  static let server = """
    import http.server, socketserver, sys
    class Server(socketserver.ForkingMixIn, http.server.HTTPServer):
        allow_reuse_address = True
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            body = self.path.encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        def log_message(self, *arguments):
            pass
    Server(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
    """

  /// `Restart=always` in a few lines of shell: runs the service with the drop-in's environment,
  /// writes its pid, and starts it again when it exits, until the file `stop` exists.
  static let supervisor = """
    cd "$1"
    while [ ! -e stop ]; do
      LD_PRELOAD="$2" ELFHOOK_OUTPUT="$3/%p.ring" python3 server.py "$4" &
      echo $! > service.pid.tmp && mv service.pid.tmp service.pid
      wait $!
    done
    """

  @Test("a service killed and restarted twice: every request it served is exported once, and its dead rings removed")
  func restartedService() throws {
    let (elfhook, library) = try Self.products()
    let directory = try TemporaryDirectory("service")
    defer { directory.remove() }
    let rings = directory.path("rings")  // under /dev/shm, as the recipe's /dev/shm/elfhook
    try FileManager.default.createDirectory(atPath: rings, withIntermediateDirectories: true)
    _ = try directory.write(Self.server, to: "server.py")
    _ = try directory.write(Self.supervisor, to: "supervise.sh")
    let output = directory.path("records.jsonl")
    let exporter = try TestProcess([
      elfhook, "export", "--jsonl", output, "--follow", "--state", directory.path("state"), rings,
    ])
    defer { exporter.signal(SIGKILL) }
    let port = try Self.unusedPort()
    let supervisor = try TestProcess(["/bin/sh", directory.path("supervise.sh"), directory.url.path, library, rings, "\(port)"])
    defer {
      _ = FileManager.default.createFile(atPath: directory.path("stop"), contents: nil)
      if supervisor.process.isRunning, let pid = Self.servicePid(in: directory) { kill(pid, SIGKILL) }
      supervisor.wait(timeout: 10)
    }

    var served: [String] = []
    var previous: pid_t?
    for (round, stop) in [(0, SIGKILL), (1, SIGTERM), (2, SIGTERM)] {
      var pid: pid_t?
      let answered = eventually(timeout: 20) {
        pid = Self.servicePid(in: directory)
        return pid != nil && pid != previous && Self.get("http://127.0.0.1:\(port)/ready-\(round)", into: &served)
      }
      #expect(answered, "the service (round \(round)) did not answer")
      for index in 0..<4 { _ = Self.get("http://127.0.0.1:\(port)/round-\(round)/\(index)", into: &served) }
      guard let pid else { break }
      if round == 2 { _ = FileManager.default.createFile(atPath: directory.path("stop"), contents: nil) }
      kill(pid, stop)
      previous = pid
    }
    supervisor.wait(timeout: 10)
    #expect(served.count == 15, "\(served)")

    // The exporter catches up with the last rings and removes them.
    var exported: [String] = []
    let caughtUp = eventually(timeout: 20) {
      exported = Self.servedTargets(in: output)
      let left = (try? FileManager.default.contentsOfDirectory(atPath: rings)) ?? []
      return exported.count >= served.count && left.isEmpty
    }
    #expect(caughtUp, "exported \(exported.count) of \(served.count); left: \((try? FileManager.default.contentsOfDirectory(atPath: rings)) ?? [])")
    #expect(exported.sorted() == served.sorted(), "every request once")
    exporter.signal(SIGTERM)
    exporter.wait(timeout: 10)
    #expect(exporter.status == 0, "\(exporter.stderr)")
    #expect(exporter.stderr.isEmpty, "\(exporter.stderr)")
    // Restarted, the exporter sends nothing again.
    let again = try TestProcess.run([elfhook, "export", "--jsonl", output, "--state", directory.path("state"), rings])
    #expect(again.status == 0, "\(again.stderr)")
    #expect(Self.servedTargets(in: output).sorted() == served.sorted())
  }

  /// The targets of the server-side http records in the exporter's JSON Lines file.
  private static func servedTargets(in path: String) -> [String] {
    guard let transactions = try? RecordFiles.load(paths: [path]) else { return [] }
    return transactions.compactMap { record in
      guard case .http(let http) = record, http.role == .server else { return nil }
      return http.target
    }
  }

  private static func servicePid(in directory: TemporaryDirectory) -> pid_t? {
    (try? String(contentsOfFile: directory.path("service.pid"), encoding: .utf8))
      .flatMap { pid_t($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
  }

  /// GETs `url` with curl (not monitored); on a 200 answer, appends its path to `served`.
  private static func get(_ url: String, into served: inout [String]) -> Bool {
    guard let curl = try? TestProcess.run(["/usr/bin/curl", "-sf", "-o", "/dev/null", "--max-time", "5", url]),
      curl.status == 0
    else { return false }
    served.append(String(url.dropFirst("http://127.0.0.1:".count).drop { $0 != "/" }))
    return true
  }

  private static func unusedPort() throws -> UInt16 {
    let probe = try TestProcess.run([
      "/usr/bin/env", "python3", "-c",
      "import socket; s = socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])",
    ])
    return try #require(UInt16(probe.stdout.trimmingCharacters(in: .whitespacesAndNewlines)))
  }
}
