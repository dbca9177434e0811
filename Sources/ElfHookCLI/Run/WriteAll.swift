import Glibc

/// Writes all of `text` to `descriptor` with write(2), resuming after EINTR and short writes.
/// Returns false on the first error (errno says which).
func writeAll(_ descriptor: Int32, _ text: String) -> Bool {
  var text = text
  return text.withUTF8 { writeAll(descriptor, UnsafeRawBufferPointer($0)) }
}

/// The same for bytes.
func writeAll(_ descriptor: Int32, _ bytes: UnsafeRawBufferPointer) -> Bool {
  var offset = 0
  while offset < bytes.count {
    let written = write(descriptor, bytes.baseAddress! + offset, bytes.count - offset)
    if written < 0 && errno == EINTR { continue }
    if written <= 0 { return false }
    offset += written
  }
  return true
}
