import Testing

@testable import NetMonitor

/// A consumer's text cache: the string of repeated bytes is reused, and a target comes out
/// redacted whether it is new or repeated.
@Suite("Record text cache")
struct RecordTextCacheTests {
  func text(_ value: String, _ body: (UnsafeRawBufferPointer) -> Void) {
    Array(value.utf8).withUnsafeBytes(body)
  }

  @Test("targets are redacted when new, when repeated and when longer than what the cache keeps")
  func redactedTargets() {
    var cache = RecordTextCache()
    let long = "/a/path/of/more/than/thirty/two/bytes?api_key=abc"
    let targets = ["/x?token=1", "/x?token=1", "/y", "/x?token=1", long, long, "/y", "/y?password=p"]
    for target in targets {
      text(target) { bytes in
        #expect(cache.redactedTarget(bytes) == TargetRedaction.redact(target))
      }
    }
    text("/x?token=1") { #expect(cache.redactedTarget($0) == "/x?token=REDACTED") }
  }

  @Test("a method or Host repeated gives the same string; other bytes give theirs")
  func repeatedText() {
    var cache = RecordTextCache()
    for value in ["GET", "GET", "POST", "", "GET", "PUT", "PUT"] {
      text(value) { #expect(cache.method($0) == value) }
    }
    for value in ["a.example", "a.example:8080", "a.example", "b.example"] {
      text(value) { #expect(cache.host($0) == value) }
    }
  }
}
