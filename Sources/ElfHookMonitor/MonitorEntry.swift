import CNetMonitor
import Glibc
@_spi(Injection) import NetMonitor

// libElfHookMonitor.so: the monitor of an injected process. libElfHookPreload.so (the small C
// library LD_PRELOAD injects, CShims/CElfHookPreload) reads the ELFHOOK_* variables at start and
// loads this library at the process's first call it does not record itself (it records name
// lookups and light clients); these are the calls it makes (their C types are in
// elfhook_preload.h). They are public so that a release build (whole-module, where internal
// symbols are hidden) exports them; exports.map keeps everything else local.

/// Starts recording as the injected library says (`cnm_handoff`: the ELFHOOK_* settings, the ring
/// it created for the lookups it recorded itself, and those lookups). Returns 0, or -1 when the
/// process must run unmonitored (said on stderr unless the log level is 0, "off"). Log level 2
/// ("info") also says where it records.
@_cdecl("elfhook_monitor_start")
public func elfhookMonitorStart(_ handoff: UnsafePointer<cnm_handoff>) -> Int32 {
  let savedErrno = errno
  defer { errno = savedErrno }
  let logLevel = handoff.pointee.log_level
  do {
    let path = try NetMonitor.startInjected(handoff)
    if logLevel >= 2 { say("recording \(processLabel()) to \(path)") }
    return 0
  } catch {
    if logLevel >= 1 { say("\(error.reason); \(processLabel()) runs unmonitored") }
    return -1
  }
}

/// The injected library exports `name` itself (`forwarder`, which calls `next`): the monitor's
/// original of `name` becomes `next` wherever it is `forwarder`. Returns the monitor's hook for
/// `name`, which the forwarder calls from now on.
@_cdecl("elfhook_monitor_adopt")
public func elfhookMonitorAdopt(
  _ name: UnsafePointer<CChar>, _ forwarder: UnsafeMutableRawPointer, _ next: UnsafeMutableRawPointer
) -> UnsafeMutableRawPointer? {
  NetMonitor.adoptForwarder(named: String(cString: name), forwarder: forwarder, next: next)
}

/// A call whose bytes the injected library handed over on a connection it tracked itself
/// (CShims/CElfHookPreload/clients.c, tls_clients.c), made after the monitor took its connections
/// over: its socket bytes, or its TLS library's plaintext, go where the hooks' would, as of when
/// they moved.
@_cdecl("elfhook_monitor_take_call")
public func elfhookMonitorTakeCall(_ call: UnsafePointer<cnm_handed_call>) {
  let savedErrno = errno
  defer { errno = savedErrno }
  NetMonitor.takeInjectedCall(call)
}

/// A connection the injected library made while the monitor took its others over: taken as they
/// were (`Traffic.adoptClients`).
@_cdecl("elfhook_monitor_take_client")
public func elfhookMonitorTakeClient(_ head: UnsafePointer<cnm_connection_head>, _ core: UnsafeRawPointer) {
  NetMonitor.takeInjectedClient(head: head, core: core)
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
