import Foundation

/// A fresh directory, removed by `remove()`: under /dev/shm where there is one (the record rings
/// tests make there live where `elfhook run` puts them; on a disk filesystem the injected library
/// says a line about the cost), else under the system's temporary directory.
struct TemporaryDirectory {
  let url: URL

  init(_ name: String) throws {
    let parent =
      access("/dev/shm", W_OK) == 0 ? URL(fileURLWithPath: "/dev/shm") : FileManager.default.temporaryDirectory
    url = parent.appendingPathComponent("elfhook-\(name)-\(UUID().uuidString)")
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
