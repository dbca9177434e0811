import Foundation
import TestSupport
import Testing

@testable import ElfHookCLI

/// `elfhook run` lists the rings' directory again only when `DirectoryWatch` says an entry may
/// have come: its modification time moved, or it is too close to the clock to tell.
@Suite("Directory watch")
struct DirectoryWatchTests {
  /// Sets the directory's modification time `secondsAgo` before now.
  private func age(_ path: String, secondsAgo: Double) {
    var now = timespec()
    clock_gettime(CLOCK_REALTIME, &now)
    let nanoseconds = Int64(now.tv_sec) * 1_000_000_000 + Int64(now.tv_nsec) - Int64(secondsAgo * 1e9)
    let stamp = timespec(tv_sec: Int(nanoseconds / 1_000_000_000), tv_nsec: Int(nanoseconds % 1_000_000_000))
    var times = [stamp, stamp]
    #expect(utimensat(AT_FDCWD, path, &times, 0) == 0)
  }

  /// A fresh directory stamped `secondsAgo` before now, and a watch of it that has not looked yet.
  private func watched(secondsAgo: Double) throws -> (TemporaryDirectory, DirectoryWatch) {
    let directory = try TemporaryDirectory("watch")
    age(directory.url.path, secondsAgo: secondsAgo)
    return (directory, DirectoryWatch(directory.url.path))
  }

  @Test("a settled directory says nothing; an entry created, renamed in or removed says so")
  func settled() throws {
    let (directory, watch) = try watched(secondsAgo: 60)
    defer { directory.remove() }
    let path = directory.url.path
    #expect(watch.changed(), "the first look")
    #expect(!watch.changed())
    #expect(!watch.changed())

    _ = try directory.write("x", to: "1.ring")  // created, then renamed into place (atomically)
    #expect(watch.changed())
    age(path, secondsAgo: 60)
    #expect(watch.changed(), "the time moved (back)")
    #expect(!watch.changed())

    #expect(unlink(directory.path("1.ring")) == 0)
    #expect(watch.changed())
  }

  @Test("a time within a tick of the clock (or ahead of it) says 'maybe' until it is old enough")
  func racy() throws {
    // Half a second ahead of the clock: close to it however slowly this test runs.
    let (directory, watch) = try watched(secondsAgo: -0.5)
    defer { directory.remove() }
    #expect(watch.changed())
    // Unchanged, but an entry made in the same tick as the last look would not have moved it.
    #expect(watch.changed())
    #expect(watch.changed())
    usleep(500_000 + UInt32(DirectoryWatch.racyNanoseconds / 1000) + 20_000)
    #expect(watch.changed(), "the look that finds the time old")
    #expect(!watch.changed())
  }

  @Test("a directory that is gone always says 'maybe'")
  func gone() throws {
    let watch = DirectoryWatch("/nonexistent/elfhook-watch")
    #expect(watch.changed())
    #expect(watch.changed())
  }
}
