import Foundation

/// Polls `condition` every 20 ms until it holds or `timeout` seconds pass; whether it held. For
/// tests that wait on another process's doing: an event, never a fixed sleep.
public func eventually(timeout: TimeInterval, _ condition: () throws -> Bool) rethrows -> Bool {
  let deadline = Date().addingTimeInterval(timeout)
  while Date() < deadline {
    if try condition() { return true }
    usleep(20_000)
  }
  return try condition()
}
