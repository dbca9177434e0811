import Foundation
import NetMonitor

/// The private directory the injected processes write their record rings into, and the consumer
/// that drains them: every process (children and exec'ed images too) makes its own ring there.
final class RingCollector {
  let directory: String
  /// The pattern handed to the injected processes as ELFHOOK_OUTPUT.
  var outputPattern: String { directory + "/%p.ring" }

  private var rings: [String: RecordRing] = [:]
  private var unreadable: Set<String> = []
  private let watch: DirectoryWatch
  /// The directory must be listed at the next drain: the first one, or a ring was not ready yet.
  private var listAgain = true

  /// Creates the directory (mode 0700) under /dev/shm when it exists, so that the rings' pages
  /// are never written back to a disk; else under TMPDIR (from `environment`) or /tmp.
  init(environment: [String: String] = ProcessEnvironment.current()) throws(CommandFailure) {
    var parents = ["/dev/shm"]
    parents.append(environment["TMPDIR"].flatMap { $0.isEmpty ? nil : $0 } ?? "/tmp")
    for parent in parents where access(parent, W_OK | X_OK) == 0 {
      var template = Array((parent + "/elfhook.XXXXXX").utf8CString)
      if mkdtemp(&template) != nil {
        directory = String(decoding: template.dropLast().map { UInt8(bitPattern: $0) }, as: UTF8.self)
        watch = DirectoryWatch(directory)
        return
      }
    }
    throw .input("cannot create a directory for the record files in \(parents.joined(separator: " or "))")
  }

  /// Takes every record published so far, from every ring ``prepareDrain(final:)`` opened, and
  /// hands it to `body`, decoded. With `final`, as ``drainSlots(final:_:)``.
  @discardableResult
  func drain(final: Bool = false, _ body: (Transaction) -> Void) -> Int {
    drainSlots(final: final) { $0.withTransaction(body) }
  }

  /// Takes every record published so far, from every ring ``prepareDrain(final:)`` opened, and
  /// hands it to `body` in its slot, not decoded (``RecordSlot``). With `final`, slots a killed
  /// process left half-written are passed over.
  @discardableResult
  func drainSlots(final: Bool = false, _ body: (RecordSlot) -> Void) -> Int {
    var count = 0
    fullestShare = 0
    for ring in rings.values {
      let taken = ring.drainSlots(skippingUnfinished: final, body)
      count += taken
      fullestShare = max(fullestShare, Double(taken) / Double(ring.capacity))
    }
    return count
  }

  /// The largest share of its ring's capacity one ring held at the last drain: how close the
  /// busiest process came to dropping records (1: its ring was full).
  private(set) var fullestShare = 0.0

  /// Opens the rings that appeared since the last call (every one, with `final`), then says
  /// whether a drain would take anything: a ring has a published record. Called before each
  /// drain, and cheap enough for every wakeup of an idle run (a `stat`, a load per ring).
  func prepareDrain(final: Bool) -> Bool {
    discoverRings(final: final)
    return rings.values.contains { $0.hasPublishedRecord }
  }

  /// Records the processes dropped because their ring was full.
  var droppedRecords: UInt64 { rings.values.reduce(0) { $0 + $1.droppedRecords } }

  /// Why records were dropped, when it was not a consumer too slow: a process that could not
  /// reserve more of its ring file (a full /dev/shm), said of the first such ring.
  var dropReason: String? {
    for ring in rings.values.sorted(by: { $0.pid < $1.pid }) {
      guard let error = ring.reservationError else { continue }
      return "process \(ring.pid) (\(ring.process)) could not reserve more of \(ring.path): "
        + String(cString: strerror(error))
    }
    return nil
  }

  /// Processes that recorded (one ring each).
  var processCount: Int { rings.count }

  /// Removes the directory and the rings in it.
  func remove() {
    rings.removeAll()
    for name in Self.entries(of: directory) ?? [] { unlink(directory + "/" + name) }
    rmdir(directory)
  }

  /// The names in `directory` but `.` and `..`; nil when it cannot be listed. (readdir:
  /// FileManager's listing cost `elfhook run -- true` 0.45 M instructions and more, the runtime
  /// looking up a generic type's conformances at its first use.)
  private static func entries(of directory: String) -> [String]? {
    guard let stream = opendir(directory) else { return nil }
    defer { closedir(stream) }
    var names: [String] = []
    while let entry = readdir(stream) {
      let name = withUnsafeBytes(of: entry.pointee.d_name) {
        String(cString: $0.bindMemory(to: CChar.self).baseAddress!)
      }
      if name != "." && name != ".." { names.append(name) }
    }
    return names
  }

  /// Opens the rings that appeared since the last drain (every one, at the final drain).
  private func discoverRings(final: Bool) {
    let changed = watch.changed()
    guard final || changed || listAgain else { return }
    listAgain = false
    guard let names = Self.entries(of: directory) else { return }
    for name in names where name.contains(".ring") {
      let path = directory + "/" + name
      guard rings[path] == nil, !unreadable.contains(path) else { continue }
      do {
        rings[path] = try RecordRing(path: path)
      } catch .notARing {
        // A ring whose header is still being written is not one yet: look again next time.
        listAgain = true
        continue
      } catch {
        unreadable.insert(path)
      }
    }
  }
}
