import CElfHookPreload
import Glibc
import NetMonitor

/// Run by the library's constructor (CShims/CElfHookPreload) when LD_PRELOAD loads it, before the
/// host's `main`: reads ELFHOOK_*, then records the host's transactions into a record ring. Any
/// problem is one line on stderr, and the host runs on unmonitored with its normal behaviour.
@_cdecl("elfhook_preload_start")
func elfhookPreloadStart() {
  let savedErrno = errno
  defer { errno = savedErrno }
  let configuration: PreloadConfiguration
  do {
    guard let configured = try PreloadConfiguration.fromEnvironment() else { return }
    configuration = configured
  } catch {
    if error.log != .off { say("\(error.problem); \(processLabel()) runs unmonitored") }
    return
  }
  do {
    let path = try NetMonitor.startRecording(toRingFiles: configuration.output, capacity: configuration.capacity)
    if configuration.log == .info { say("recording \(processLabel()) to \(path)") }
  } catch {
    if configuration.log != .off { say("\(error); \(processLabel()) runs unmonitored") }
  }
}

/// `name[pid]`, the way diagnostics name the host.
private func processLabel() -> String {
  "\(NetMonitor.processName())[\(getpid())]"
}

/// One line to stderr, with one write: no stdio buffer of the host is touched.
private func say(_ message: String) {
  var line = "elfhook: " + message + "\n"
  line.withUTF8 { bytes in _ = write(STDERR_FILENO, bytes.baseAddress, bytes.count) }
}
