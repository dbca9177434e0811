import Foundation

/// A fresh directory under the system's temporary directory, removed by `remove()`.
struct TemporaryDirectory {
  let url: URL

  init(_ name: String) throws {
    url = FileManager.default.temporaryDirectory.appendingPathComponent("elfhook-\(name)-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
  }

  func path(_ file: String) -> String { url.appendingPathComponent(file).path }

  func write(_ text: String, to file: String) throws -> String {
    try text.write(toFile: path(file), atomically: true, encoding: .utf8)
    return path(file)
  }

  func remove() {
    try? FileManager.default.removeItem(at: url)
  }
}
