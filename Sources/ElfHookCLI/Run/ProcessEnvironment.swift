import Glibc

/// The process's environment as `environ` holds it: what `ProcessInfo.processInfo.environment`
/// gives, without its cost at `elfhook run`'s start (with `readdir` for FileManager's listing,
/// 1.0 M instructions, most of them the runtime looking up generic types' conformances). Of two
/// entries with the same name the first wins, as with getenv; an entry without `=` is no variable.
enum ProcessEnvironment {
  static func current() -> [String: String] {
    var variables = [String: String](minimumCapacity: 64)
    var entry = environ
    while let pointer = entry.pointee {
      let text = String(cString: pointer)
      if let equals = text.utf8.firstIndex(of: UInt8(ascii: "=")) {
        let name = String(text[..<equals])
        if variables[name] == nil { variables[name] = String(text[text.utf8.index(after: equals)...]) }
      }
      entry += 1
    }
    return variables
  }
}
