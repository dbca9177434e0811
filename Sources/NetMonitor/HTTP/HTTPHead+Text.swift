/// Text views of the captured bytes, for the recorder thread. They allocate; never call them from a hook.
extension HTTPHead {
  /// The method as text (`"GET"`); empty for a response.
  public var methodString: String { Self.string(method, length: Int(methodLength)) }

  /// The request target as text, possibly truncated (``targetTruncated``); invalid UTF-8 is replaced
  /// with U+FFFD.
  public var targetString: String { Self.string(target, length: Int(targetLength)) }

  /// The `Host` header value as text, or `nil` when the head had none.
  public var hostString: String? { hostLength == 0 ? nil : Self.string(host, length: Int(hostLength)) }

  /// The HTTP version as text: `"1.0"` or `"1.1"`.
  public var versionString: String { "1.\(minorVersion)" }

  private static func string<let capacity: Int>(_ bytes: InlineArray<capacity, UInt8>, length: Int) -> String {
    withUnsafeBytes(of: bytes) { raw in
      String(decoding: raw.prefix(min(length, capacity)), as: UTF8.self)
    }
  }
}

/// The captured bytes of a head in memory (a record ring's slot), in place: each text up to its length.
extension UnsafePointer where Pointee == HTTPHead {
  var methodBytes: UnsafeRawBufferPointer {
    Self.bytes(pointer(to: \.method)!, Int(pointee.methodLength), HTTPHead.methodCapacity)
  }

  var targetBytes: UnsafeRawBufferPointer {
    Self.bytes(pointer(to: \.target)!, Int(pointee.targetLength), HTTPHead.targetCapacity)
  }

  var hostBytes: UnsafeRawBufferPointer {
    Self.bytes(pointer(to: \.host)!, Int(pointee.hostLength), HTTPHead.hostCapacity)
  }

  private static func bytes<Text>(
    _ text: UnsafePointer<Text>, _ length: Int, _ capacity: Int
  ) -> UnsafeRawBufferPointer {
    UnsafeRawBufferPointer(start: text, count: Swift.min(length, capacity))
  }
}
