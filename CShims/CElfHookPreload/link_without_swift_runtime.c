/* How this library stays plain C when SwiftPM links it.
 *
 * SwiftPM links every product with swiftc, which adds Swift's start-up object (dropped with
 * -nostartfiles, Package.swift) and `-lswiftCore`, before any linker flag a package can give: the
 * library would need libswiftCore.so, found on no machine without a toolchain, and load it into
 * every process. The linker's --as-needed drops a library nothing refers to, but it only applies
 * to the libraries after it. swiftc places the "autolink" entries of the objects it links (what
 * Swift modules record in this section for the libraries they need) before `-lswiftCore`, so this
 * one entry turns --as-needed on there. `readelf -d libElfHookPreload.so` lists libc.so.6 alone;
 * InjectionTests checks it. */
__attribute__((used, section(".swift1_autolink_entries"))) static const char link_as_needed[] = "-Wl,--as-needed";
