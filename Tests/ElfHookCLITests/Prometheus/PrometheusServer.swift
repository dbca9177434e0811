import Foundation
import Glibc
import Testing
import TestSupport

/// A real Prometheus (Debian's `prometheus` package, `/usr/bin/prometheus`) started by the test on
/// 127.0.0.1, scraping one target every second, with its configuration and storage in a
/// temporary directory. The Debian package's own service is not used. `stop()` kills it.
final class PrometheusServer {
  static let path = "/usr/bin/prometheus"
  static var isInstalled: Bool { FileManager.default.isExecutableFile(atPath: path) }
  static let missing: Comment = "Prometheus is not installed: `apt-get install prometheus` (scripts/install-dependencies)"

  let port: Int
  let directory: TemporaryDirectory
  private let process: Process

  struct Failure: Error, CustomStringConvertible {
    var description: String
  }

  /// Starts Prometheus scraping `127.0.0.1:targetPort/metrics`; returns once it answers `/-/ready`.
  init(targetPort: Int, readyWithin timeout: TimeInterval = 30) throws {
    directory = try TemporaryDirectory("prometheus")
    port = try HTTPGet.freePort()
    let configuration = try directory.write(
      """
      global:
        scrape_interval: 1s
        scrape_timeout: 1s
        evaluation_interval: 1s
      scrape_configs:
        - job_name: elfhook
          static_configs:
            - targets: ['127.0.0.1:\(targetPort)']

      """, to: "prometheus.yml")
    process = Process()
    process.executableURL = URL(fileURLWithPath: Self.path)
    process.arguments = [
      "--config.file=\(configuration)", "--storage.tsdb.path=\(directory.path("data"))",
      "--web.listen-address=127.0.0.1:\(port)", "--log.level=warn",
    ]
    let log = directory.path("prometheus.log")
    _ = FileManager.default.createFile(atPath: log, contents: nil)
    process.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: log))
    process.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: log))
    process.standardInput = FileHandle.nullDevice
    try process.run()
    let deadline = Date().addingTimeInterval(timeout)
    while Date() < deadline {
      if !process.isRunning {
        let text = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
        throw Failure(description: "prometheus exited with \(process.terminationStatus): \(text)")
      }
      if let ready = try? HTTPGet.fetch(port: port, path: "/-/ready"), ready.status == 200 { return }
      usleep(100_000)
    }
    stop()
    throw Failure(description: "prometheus did not become ready in \(Int(timeout)) s")
  }

  /// Kills Prometheus (SIGTERM, then SIGKILL after 5 s) and removes its directory.
  func stop() {
    if process.isRunning {
      process.terminate()
      let deadline = Date().addingTimeInterval(5)
      while process.isRunning && Date() < deadline { usleep(20_000) }
      if process.isRunning { kill(process.processIdentifier, SIGKILL) }
      process.waitUntilExit()
    }
    directory.remove()
  }

  /// The value of an instant query that returns one sample (`sum(…)`, `count(…)`), or `nil` when it
  /// returns none yet.
  func scalar(_ query: String) throws -> Double? {
    let encoded = query.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? query
    let response = try HTTPGet.fetch(port: port, path: "/api/v1/query?query=\(encoded)")
    guard response.status == 200,
      let json = try JSONSerialization.jsonObject(with: Data(response.body.utf8)) as? [String: Any],
      let data = json["data"] as? [String: Any], let result = data["result"] as? [[String: Any]]
    else { throw Failure(description: "query \(query): HTTP \(response.status): \(response.body)") }
    guard let first = result.first, let value = first["value"] as? [Any], let text = value.last as? String else {
      return nil
    }
    return Double(text)
  }

  /// Polls `query` until it equals `expected` or `timeout` passes; the last value seen.
  func waitFor(_ query: String, toEqual expected: Double, within timeout: TimeInterval = 30) throws -> Double? {
    let deadline = Date().addingTimeInterval(timeout)
    var last: Double?
    while Date() < deadline {
      last = try scalar(query)
      if last == expected { return last }
      usleep(250_000)
    }
    return last
  }
}
