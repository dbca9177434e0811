import Foundation

/// The monitored command: spawned with the caller's stdin, stdout, stderr and terminal, in the same
/// process group (so the terminal's Ctrl-C reaches it directly), with an environment of our choice.
struct ChildProcess {
  let pid: pid_t

  /// The signals `elfhook run` takes over: forwarded to the child when another process sent them
  /// to us. The terminal sends SIGINT/SIGQUIT to the whole foreground group, child included, so
  /// those are not forwarded a second time.
  static let forwardedSignals: [Int32] = [SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2]

  /// Starts `arguments` (argv[0] looked up in PATH) with `environment`; `defaultSIGPIPE` gives it
  /// SIGPIPE's default action back (elfhook itself ignores SIGPIPE).
  static func spawn(_ arguments: [String], environment: [String: String], defaultSIGPIPE: Bool) throws(SpawnError)
    -> ChildProcess
  {
    var attributes = posix_spawnattr_t()
    posix_spawnattr_init(&attributes)
    defer { posix_spawnattr_destroy(&attributes) }
    // The child starts with the signal mask and dispositions the user's shell gave us, not with
    // the signals we block to wait for them: a signal the caller ignored (nohup's SIGHUP, a
    // background job's SIGINT, `trap '' TERM`) stays ignored, and elfhook does not forward it either.
    var empty = sigset_t()
    sigemptyset(&empty)
    posix_spawnattr_setsigmask(&attributes, &empty)
    var defaults = sigset_t()
    sigemptyset(&defaults)
    for signal in forwardedSignals + [SIGCHLD] where !isIgnored(signal) { sigaddset(&defaults, signal) }
    if defaultSIGPIPE { sigaddset(&defaults, SIGPIPE) }
    // glibc's posix_spawn leaves its two internal signals (32 and 33: thread cancellation and
    // setxid) ignored in the child, and an ignored signal stays ignored across exec. sigaddset
    // refuses them, so their bits (signal n is bit n − 1) are set here.
    withUnsafeMutableBytes(of: &defaults) { bits in
      bits.storeBytes(of: bits.load(as: UInt64.self) | 1 << 31 | 1 << 32, as: UInt64.self)
    }
    posix_spawnattr_setsigdefault(&attributes, &defaults)
    posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))

    let argv = arguments.map { strdup($0) } + [nil]
    let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
    defer {
      argv.forEach { free($0) }
      envp.forEach { free($0) }
    }
    var pid = pid_t()
    var status = posix_spawnp(&pid, arguments[0], nil, &attributes, argv, envp)
    // An executable file that is not a program (a script without `#!`) runs under /bin/sh, as
    // execvp and every shell run it; posix_spawnp does not do that itself.
    if status == ENOEXEC,
      let path = CommandPreflight.resolve(arguments[0], searchPath: environment["PATH"] ?? "/usr/bin:/bin")
    {
      let shellArgv = [strdup("/bin/sh"), strdup(path)] + argv.dropFirst()
      defer {
        free(shellArgv[0])
        free(shellArgv[1])
      }
      status = posix_spawn(&pid, "/bin/sh", nil, &attributes, Array(shellArgv), envp)
    }
    guard status == 0 else {
      // ENOENT for a file that is there: what it needs to run is not (its #! interpreter, or the
      // ELF loader it names), as the shell says it.
      let path = CommandPreflight.resolve(arguments[0], searchPath: environment["PATH"] ?? "/usr/bin:/bin")
      let exists = path.map { access($0, F_OK) == 0 } ?? false
      throw SpawnError(command: arguments[0], errno: status, fileExists: exists)
    }
    return ChildProcess(pid: pid)
  }

  /// Whether `signal` is ignored in this process (as the caller left it: elfhook changes only
  /// SIGPIPE's disposition, after reading it).
  static func isIgnored(_ signal: Int32) -> Bool {
    var action = sigaction()
    sigaction(signal, nil, &action)
    return unsafeBitCast(action.__sigaction_handler.sa_handler, to: Int.self) == unsafeBitCast(SIG_IGN, to: Int.self)
  }

  /// Why the command could not be started, with the shell's exit status for it.
  struct SpawnError: Error, CustomStringConvertible {
    var command: String
    var errno: Int32
    /// The command's file exists (a missing interpreter or loader gives ENOENT too).
    var fileExists = false
    var exitStatus: Int32 { errno == ENOENT ? 127 : 126 }
    var description: String {
      guard errno == ENOENT else { return "\(command): \(String(cString: strerror(errno)))" }
      return fileExists
        ? "\(command): cannot execute: required file not found (its #! interpreter, or the loader it names)"
        : "\(command): command not found"
    }
  }
}

/// How the command ended, as a shell reports it.
struct ChildExit {
  let waitStatus: Int32

  var signal: Int32? { waitStatus & 0x7f != 0 && waitStatus & 0x7f != 0x7f ? waitStatus & 0x7f : nil }
  var coreDumped: Bool { waitStatus & 0x80 != 0 }

  /// The command's exit status, or 128 + the signal that killed it (what `sh` sets `$?` to).
  var shellStatus: Int32 { signal.map { 128 + $0 } ?? (waitStatus >> 8) & 0xff }

  /// What bash prints when a command dies by a signal: nothing for SIGINT and SIGPIPE, else the
  /// signal's description ("Killed", "Segmentation fault (core dumped)").
  var signalMessage: String? {
    guard let signal, signal != SIGINT, signal != SIGPIPE else { return nil }
    let text = strsignal(signal).map { String(cString: $0) } ?? "Signal \(signal)"
    return coreDumped ? "\(text) (core dumped)" : text
  }
}
