import Glibc

// The Swift runtime's source of `CommandLine.arguments`, defined here so that the static runtime's
// own (CommandLine.cpp in libswiftCore.a, an archive member the linker now has no reason to pull
// in) is left out of the monitor: its initializer finds the host's argv by parsing
// /proc/self/maps when the library loads — 0.45 M instructions and 26 system calls in every
// process the monitor is loaded into, for arguments the monitor never reads. Here there are none.

nonisolated(unsafe) private let noArguments: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?> = {
  let arguments = UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>.allocate(capacity: 1)
  arguments.initialize(to: nil)
  return arguments
}()

@_cdecl("_swift_stdlib_getUnsafeArgvArgc")
func hostArguments(_ count: UnsafeMutablePointer<Int32>) -> UnsafeMutablePointer<UnsafeMutablePointer<CChar>?> {
  count.pointee = 0
  return noArguments
}
