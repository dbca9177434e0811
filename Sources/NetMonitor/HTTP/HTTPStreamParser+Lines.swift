extension HTTPStreamParser {
  /// The fast path of ``feed(_:as:onEvent:)``: consumes at `index` whole start lines and header lines
  /// that lie entirely in the buffer, and runs of bytes that need no decision (a method, a request
  /// target, a header name or value, text nobody records), without a call per byte. A line is taken in
  /// steps, each leaving the parser exactly where ``scan(_:)`` would have after the same bytes: runs
  /// may stop anywhere, the other steps (version, status code, name and colon, line end) complete or
  /// change nothing. So a line cut by the end of the buffer, or anything unusual (a bare CR, an obsolete
  /// line folding, an invalid byte), is left to `scan`, which decides as it always did.
  ///
  /// A completed step falls through to the next one without dispatching on the phase again: every step
  /// checks that its bytes are there.
  ///
  /// Returns ``ScanOutcome/more`` when the byte at `index` (if any) must go through ``scan(_:)``; the
  /// caller accounts the consumed bytes against ``maxHeadBytes`` before acting on the outcome.
  @inline(__always)
  mutating func scanLines(_ base: UnsafeRawPointer, at index: inout Int, count: Int) -> ScanOutcome {
    while index < count {
      switch phase {
      case .requestMethod:
        while index < count {
          let byte = base.load(fromByteOffset: index, as: UInt8.self)
          guard HTTPByteClass.isMethod(byte), Int(head.methodLength) < HTTPHead.methodCapacity else { break }
          head.appendMethodByte(byte)
          index &+= 1
        }
        guard index < count, base.load(fromByteOffset: index, as: UInt8.self) == HTTPByteClass.space,
          head.methodLength > 0
        else { return .more }
        index &+= 1
        phase = .requestTarget
        fallthrough

      case .requestTarget:
        let end = HTTPByteClass.targetEnd(base, from: index, count: count)
        head.appendTarget(UnsafeRawBufferPointer(start: base + index, count: end &- index))
        index = end
        guard index < count, base.load(fromByteOffset: index, as: UInt8.self) == HTTPByteClass.space,
          head.targetLength > 0
        else { return .more }
        index &+= 1
        phase = .requestVersion
        matchIndex = 0
        fallthrough

      case .requestVersion:
        guard matchIndex == 0, let minor = Self.version(base, at: index, count: count),
          let next = Self.lineEnd(base, at: index &+ 8, count: count)
        else { return .more }
        head.minorVersion = minor
        index = next
        phase = .headerLineStart

      case .statusVersion:
        guard matchIndex == 0, index &+ 8 < count,
          base.load(fromByteOffset: index &+ 8, as: UInt8.self) == HTTPByteClass.space,
          let minor = Self.version(base, at: index, count: count)
        else { return .more }
        head.minorVersion = minor
        index &+= 9
        phase = .statusCode
        fallthrough

      case .statusCode:
        // Three digits, the first not 0, then SP or the line end (no reason phrase).
        guard matchIndex == 0, index &+ 3 < count,
          let hundreds = HTTPByteClass.decimal(base.load(fromByteOffset: index, as: UInt8.self)),
          hundreds > 0,
          let tens = HTTPByteClass.decimal(base.load(fromByteOffset: index &+ 1, as: UInt8.self)),
          let units = HTTPByteClass.decimal(base.load(fromByteOffset: index &+ 2, as: UInt8.self))
        else { return .more }
        let after = index &+ 3
        if base.load(fromByteOffset: after, as: UInt8.self) == HTTPByteClass.space {
          index = after &+ 1
          phase = .statusReason
        } else if let next = Self.lineEnd(base, at: after, count: count) {
          index = next
          phase = .headerLineStart
        } else {
          return .more
        }
        head.status = UInt16(truncatingIfNeeded: hundreds &* 100 &+ tens &* 10 &+ units)

      case .statusReason, .headerIgnoredLine:
        index = HTTPByteClass.fieldTextEnd(base, from: index, count: count)
        guard let next = Self.lineEnd(base, at: index, count: count) else { return .more }
        index = next
        phase = .headerLineStart
        fallthrough

      case .headerLineStart, .headerValue:
        // Header lines one after the other, each a name and its colon, then its value, without
        // dispatching on the phase between them (a line is ~150 instructions, the dispatch was 20
        // of them). The position is kept in a local and stored where the loop leaves.
        var at = index
        while true {
          if phase == .headerLineStart {
            if let next = Self.lineEnd(base, at: at, count: count) {
              index = next
              return .headEnded
            }
            // A name (decided from its length and bytes, never copied) and its colon, or the byte
            // path. Common name bytes are checked sixteen at a time, other token bytes one by one.
            var colon = HTTPByteClass.commonTokenEnd(base, from: at, count: count)
            while colon < count, HTTPByteClass.isToken(base.load(fromByteOffset: colon, as: UInt8.self)) {
              colon &+= 1
            }
            guard colon > at, colon < count,
              base.load(fromByteOffset: colon, as: UInt8.self) == HTTPByteClass.colon
            else {
              index = at
              return .more
            }
            beginFieldValue(Self.headerField(named: base + at, length: colon &- at))
            at = colon &+ 1
            phase = .headerValue
          }
          // The value up to the line end, found sixteen bytes at a time; only the few headers that
          // matter look at it.
          let end = HTTPByteClass.fieldTextEnd(base, from: at, count: count)
          let value = UnsafeRawBufferPointer(start: base + at, count: end &- at)
          at = end
          index = end
          guard field == .other || valueBytes(value) else { return .invalid }
          guard let next = Self.lineEnd(base, at: at, count: count) else { return .more }
          guard field == .other || endFieldValue() else { return .invalid }
          at = next
          phase = .headerLineStart
        }

      case .headerName:  // a name cut by the end of an earlier buffer
        var end = index
        while end < count, HTTPByteClass.isToken(base.load(fromByteOffset: end, as: UInt8.self)) { end &+= 1 }
        appendScratch(UnsafeRawBufferPointer(start: base + index, count: end &- index))
        index = end
        return .more

      case .trailerLine, .chunkExtension:
        index = HTTPByteClass.fieldTextEnd(base, from: index, count: count)
        return .more

      default:
        return .more
      }
    }
    return .more
  }

  /// The index after the line end (LF or CRLF) at `index`, or `nil` if there is none in the buffer.
  @inline(__always)
  static func lineEnd(_ base: UnsafeRawPointer, at index: Int, count: Int) -> Int? {
    guard index < count else { return nil }
    let byte = base.load(fromByteOffset: index, as: UInt8.self)
    if byte == HTTPByteClass.lf { return index &+ 1 }
    guard byte == HTTPByteClass.cr, index &+ 1 < count,
      base.load(fromByteOffset: index &+ 1, as: UInt8.self) == HTTPByteClass.lf
    else { return nil }
    return index &+ 2
  }

  /// The minor version if the eight bytes at `index` are `HTTP/1.` and a digit; `nil` otherwise.
  @inline(__always)
  static func version(_ base: UnsafeRawPointer, at index: Int, count: Int) -> UInt8? {
    guard index &+ 8 <= count else { return nil }
    let word = UInt64(littleEndian: base.loadUnaligned(fromByteOffset: index, as: UInt64.self))
    guard word & 0x00FF_FFFF_FFFF_FFFF == HTTPByteClass.versionPrefixWord,
      let minor = HTTPByteClass.decimal(UInt8(truncatingIfNeeded: word >> 56))
    else { return nil }
    return UInt8(truncatingIfNeeded: minor)
  }
}
