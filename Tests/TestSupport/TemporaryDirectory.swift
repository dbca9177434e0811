import Foundation

/// A fresh scratch directory, removed by `remove()`.
///
/// By default under /dev/shm where there is one: the record rings tests make there live where
/// `elfhook run` puts them (on a disk filesystem the injected library says a line about the cost).
/// `inSharedMemory: false` puts it under the system's temporary directory, for what is better on
/// disk (compiled fixtures, large files).
public struct TemporaryDirectory: Sendable {
  public let url: URL

  public init(_ name: String, inSharedMemory: Bool = true) throws {
    let parent =
      inSharedMemory && access("/dev/shm", W_OK) == 0
      ? URL(fileURLWithPath: "/dev/shm") : FileManager.default.temporaryDirectory
    url = parent.appendingPathComponent("elfhook-\(name)-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
  }

  /// The URL of `file` in the directory.
  public func file(_ name: String) -> URL { url.appendingPathComponent(name) }

  /// What `file` in the directory holds, as text; `""` when it cannot be read.
  public func contents(_ name: String) -> String {
    (try? String(contentsOf: file(name), encoding: .utf8)) ?? ""
  }

  /// The path of `file` in the directory.
  public func path(_ file: String) -> String { url.appendingPathComponent(file).path }

  /// Writes `text` to `file` in the directory; its path.
  public func write(_ text: String, to file: String) throws -> String {
    try text.write(toFile: path(file), atomically: true, encoding: .utf8)
    return path(file)
  }

  public func remove() {
    try? FileManager.default.removeItem(at: url)
  }
}
