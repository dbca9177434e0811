#if canImport(Glibc)
  import Glibc
#endif

/// What the report renderers need to know about where their text goes.
enum TerminalCapabilities {
  /// The width of the terminal on `descriptor`, else `$COLUMNS`, else 100 columns (a pipe, a file).
  ///
  /// The corresponding C function is `ioctl` with `TIOCGWINSZ`.
  static func width(of descriptor: Int32) -> Int {
    var size = winsize()
    if ioctl(descriptor, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 0 { return Int(size.ws_col) }
    if let columns = getenv("COLUMNS").flatMap({ Int(String(cString: $0)) }), columns > 0 { return columns }
    return 100
  }

  /// Whether to color text for `descriptor`: a terminal that is not `TERM=dumb`, and `NO_COLOR`
  /// unset (https://no-color.org).
  ///
  /// The corresponding C function is `isatty`.
  static func supportsColor(_ descriptor: Int32) -> Bool {
    guard isatty(descriptor) == 1, getenv("NO_COLOR") == nil else { return false }
    return getenv("TERM").map { String(cString: $0) != "dumb" } ?? false
  }
}
