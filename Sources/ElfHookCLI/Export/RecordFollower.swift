import Foundation

#if canImport(Glibc)
  import Glibc
#endif

/// The record files an export reads, followed as they grow: what `elfhook export --otlp`,
/// `--jsonl` and `--prometheus` all read through. Each file is a ``RecordSource`` — a record ring
/// (``RingSource``), else JSON Lines (``JSONLinesSource``, which reports a line that is not a
/// record, with its file and line, and skips it) — resumed from a saved cursor when there is one.
///
/// A directory among the paths is watched: every record ring in it (a name with `.ring` in it, as
/// `ELFHOOK_OUTPUT=DIR/%p.ring` makes them) is followed, those that appear later too (the
/// directory is listed at every ``discoverRings(saved:)``). A ring found there whose process has
/// exited (``RingProducer``) is read to its end, then removed: a service that restarts or forks
/// for days does not fill `/dev/shm`. Files named one by one are never removed.
final class RecordFollower {
  /// A file being followed: its cursor's key (its absolute path), and whether it was found in a
  /// watched directory (and is removed once its process is gone and it is read).
  struct Entry {
    var key: String
    var source: any RecordSource
    var inWatchedDirectory: Bool
  }

  /// What one ``pass(atEnd:deliver:)`` did.
  struct Pass {
    /// Some batch was delivered.
    var progressed = false
    /// A ring's slot that its process was killed writing was passed over: read on at once.
    var skippedUnfinished = false
    /// The keys of the rings read to their end and removed.
    var removed: [String] = []
  }

  private(set) var entries: [Entry] = []
  /// Directories watched for rings.
  private var directories: [String] = []
  /// Files in a watched directory that could not be opened as a ring (said once).
  private var passedOver: Set<String> = []
  private let log: (String) -> Void

  /// Opens every file of `paths` (from its cursor in `saved`, keyed by absolute path), and every
  /// ring in the directories among them.
  ///
  /// - Throws: `RecordFileError.unreadable` for the first named file that cannot be opened.
  init(paths: [String], saved: [String: SourceCursor], log: @escaping (String) -> Void) throws {
    self.log = log
    for path in paths {
      var status = stat()
      if stat(path, &status) == 0, (status.st_mode & S_IFMT) == S_IFDIR {
        directories.append(path)
      } else {
        try add(path, saved: saved, inWatchedDirectory: false)
      }
    }
    _ = try discoverRings(saved: saved)
  }

  /// Lines of JSON Lines files that were not records, reported and skipped so far.
  var skippedLines: Int {
    entries.reduce(0) { $0 + (($1.source as? JSONLinesSource)?.skippedLines ?? 0) }
  }

  /// Opens the rings that appeared in the watched directories since the last call, and returns
  /// their entries. A ring whose header is not written yet (its magic comes last) is looked at
  /// again next time; a file that cannot be read as a ring is said once and passed over.
  func discoverRings(saved: [String: SourceCursor]) throws -> [Entry] {
    let known = entries.count
    for directory in directories {
      guard let names = try? FileManager.default.contentsOfDirectory(atPath: directory) else { continue }
      for name in names.sorted() where name.contains(".ring") {
        let path = directory.hasSuffix("/") ? directory + name : directory + "/" + name
        guard !passedOver.contains(path), !entries.contains(where: { $0.source.path == path }) else { continue }
        guard RecordFiles.isRecordRing(path) else { continue }
        do {
          try add(path, saved: saved, inWatchedDirectory: true)
        } catch let error as RecordFileError {
          log("\(error); passing it over")
          passedOver.insert(path)
        }
      }
    }
    return Array(entries[known...])
  }

  /// Reads every file once, as far as it goes, handing each batch to `deliver`, which returns
  /// whether the batch was taken (`false`: stop reading that file for this pass). `deliver` moves
  /// the source's cursor (``RecordSource/acknowledge(_:)``) and, once that is safe, frees a ring's
  /// slots (``RecordSource/didPersist(_:)``). `atEnd` says the files will not grow any more: a last
  /// line without its newline is then read too. Stops early when ``StopSignal`` is requested.
  func pass(atEnd: Bool, deliver: (SourceBatch, Entry) throws -> Bool) throws -> Pass {
    var pass = Pass()
    var finished: [Int] = []
    for (index, entry) in entries.enumerated() {
      let source = entry.source
      // Asked before the last read: a producer gone now published its last record before.
      let producerGone = entry.inWatchedDirectory && !((source as? RingSource)?.producerIsRunning ?? true)
      var caughtUp = false
      while !StopSignal.isRequested {
        guard let batch = try source.nextBatch(maxSpans: TraceBatch.maxSpans, atEnd: atEnd) else {
          caughtUp = true
          break
        }
        guard try deliver(batch, entry) else { break }
        pass.progressed = true
      }
      guard producerGone, caughtUp, !StopSignal.isRequested, let ring = source as? RingSource else { continue }
      if ring.skipUnfinished() {
        pass.progressed = true
        pass.skippedUnfinished = true
        continue
      }
      finished.append(index)
    }
    for index in finished.reversed() {
      let entry = entries.remove(at: index)
      unlink(entry.source.path)
      pass.removed.append(entry.key)
    }
    return pass
  }

  /// Opens `path` as a record source and adds it (a ring, else JSON Lines).
  private func add(_ path: String, saved: [String: SourceCursor], inWatchedDirectory: Bool) throws {
    let key = Self.absolutePath(path)
    let source: any RecordSource =
      RecordFiles.isRecordRing(path)
      ? try RingSource(path: path, saved: saved[key])
      : try JSONLinesSource(path: path, saved: saved[key], log: log)
    entries.append(Entry(key: key, source: source, inWatchedDirectory: inWatchedDirectory))
  }

  /// `path` made absolute and resolved (the key of its cursor), or as given when it cannot be.
  static func absolutePath(_ path: String) -> String {
    guard let resolved = realpath(path, nil) else { return path }
    defer { free(resolved) }
    return String(cString: resolved)
  }
}
