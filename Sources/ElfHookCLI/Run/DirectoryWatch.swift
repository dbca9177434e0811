import Glibc

/// Says whether entries were created in, or moved into, a directory since the last look (inotify),
/// so that `elfhook run` lists the rings' directory again only then: listing it at every drain,
/// 200 times a second under load, was 13% of the consumer's CPU time. Without inotify (its limits
/// reached), every look answers "maybe".
final class DirectoryWatch {
  private let descriptor: Int32

  init(_ path: String) {
    var descriptor = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
    if descriptor >= 0 && inotify_add_watch(descriptor, path, UInt32(IN_CREATE | IN_MOVED_TO)) < 0 {
      close(descriptor)
      descriptor = -1
    }
    self.descriptor = descriptor
  }

  deinit {
    if descriptor >= 0 { close(descriptor) }
  }

  /// Whether something may have appeared since the last call (the events are consumed).
  func changed() -> Bool {
    guard descriptor >= 0 else { return true }
    var changed = false
    withUnsafeTemporaryAllocation(byteCount: 4096, alignment: 8) { buffer in
      while read(descriptor, buffer.baseAddress, buffer.count) > 0 { changed = true }
    }
    return changed
  }
}
