import Foundation

#if canImport(Glibc)
  import Glibc
#endif

/// The `--state` directory: `state.json` (``ExportState``) and `lock`, which one exporter at a
/// time holds (two exporters of the same files would send every record twice).
///
/// The directory is created mode 0700. `save` writes `state.json.tmp`, `fsync`s it, renames it
/// over `state.json` and `fsync`s the directory: a crash leaves the old state or the new one,
/// never a mix.
final class ExportStateStore {
  let directory: String
  private let lockDescriptor: Int32

  /// The default directory for `records`: `FIRST.elfhook-export` beside the first record file.
  static func defaultDirectory(for records: [String]) -> String {
    (records.first ?? "records") + ".elfhook-export"
  }

  /// Opens (creating it if need be) the state directory and takes its lock.
  ///
  /// - Throws: `CommandFailure` when the directory cannot be made or used, or another exporter
  ///   holds it. The corresponding C functions are `mkdir`, `open` and `flock`.
  init(directory: String) throws {
    self.directory = directory
    if mkdir(directory, 0o700) != 0 && errno != EEXIST {
      throw CommandFailure.input("cannot create the state directory \(directory): \(String(cString: strerror(errno)))")
    }
    var status = stat()
    guard lstat(directory, &status) == 0, (status.st_mode & S_IFMT) == S_IFDIR else {
      throw CommandFailure.input("the state directory \(directory) is not a directory")
    }
    lockDescriptor = open(directory + "/lock", O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
    guard lockDescriptor >= 0 else {
      throw CommandFailure.input("cannot open \(directory)/lock: \(String(cString: strerror(errno)))")
    }
    guard flock(lockDescriptor, LOCK_EX | LOCK_NB) == 0 else {
      close(lockDescriptor)
      throw CommandFailure.input("another elfhook export is using the state directory \(directory)")
    }
  }

  deinit { close(lockDescriptor) }

  private var statePath: String { directory + "/state.json" }

  /// The saved state, or a fresh one when there is none.
  ///
  /// - Throws: `CommandFailure` when `state.json` exists but cannot be read or understood.
  func load() throws -> ExportState {
    guard let data = FileManager.default.contents(atPath: statePath) else { return ExportState() }
    do {
      let state = try JSONDecoder().decode(ExportState.self, from: data)
      guard state.version == ExportState().version else {
        throw CommandFailure.input("\(statePath) is of version \(state.version); remove it to start over")
      }
      return state
    } catch let failure as CommandFailure {
      throw failure
    } catch {
      throw CommandFailure.input("\(statePath) is not a state file elfhook wrote; remove it to start over")
    }
  }

  /// Replaces the saved state with `state`, atomically and durably.
  ///
  /// - Throws: `CommandFailure` naming the call that failed. The corresponding C functions are
  ///   `open`, `write`, `fsync` and `rename`.
  func save(_ state: ExportState) throws {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.sortedKeys]
    let bytes = [UInt8](try encoder.encode(state))
    let temporary = statePath + ".tmp"
    let descriptor = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0o600)
    guard descriptor >= 0 else { throw failure("open", temporary) }
    var written = 0
    while written < bytes.count {
      let result = bytes.withUnsafeBytes { write(descriptor, $0.baseAddress! + written, bytes.count - written) }
      if result < 0 && errno == EINTR { continue }
      guard result > 0 else {
        let error = failure("write", temporary)
        close(descriptor)
        throw error
      }
      written += result
    }
    guard fsync(descriptor) == 0 else {
      let error = failure("fsync", temporary)
      close(descriptor)
      throw error
    }
    close(descriptor)
    guard rename(temporary, statePath) == 0 else { throw failure("rename", statePath) }
    let directoryDescriptor = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
    if directoryDescriptor >= 0 {
      _ = fsync(directoryDescriptor)
      close(directoryDescriptor)
    }
  }

  private func failure(_ call: String, _ path: String) -> CommandFailure {
    .input("cannot save the export state (\(call) \(path)): \(String(cString: strerror(errno)))")
  }
}
