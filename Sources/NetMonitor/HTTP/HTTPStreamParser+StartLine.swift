extension HTTPStreamParser {
  /// Scans one byte of a request line (`method SP target SP HTTP/1.x`) or status line
  /// (`HTTP/1.x SP 3DIGIT [SP reason]`). Strict on purpose: the start line is what tells HTTP/1.x from
  /// anything else, so a stream that is not HTTP fails here within its first bytes.
  @inline(__always)
  mutating func scanStartLine(_ byte: UInt8) -> ScanOutcome {
    switch phase {
    case .requestMethod:
      if HTTPByteClass.isMethod(byte) {
        guard Int(head.methodLength) < HTTPHead.methodCapacity else { return .invalid }
        head.appendMethodByte(byte)
        return .more
      }
      guard byte == HTTPByteClass.space, head.methodLength > 0 else { return .invalid }
      phase = .requestTarget
      return .more

    case .requestTarget:
      if HTTPByteClass.isTarget(byte) {
        head.appendTargetByte(byte)
        return .more
      }
      // Anything but one SP after a non-empty target (including HTTP/0.9's line end) is not HTTP/1.x.
      guard byte == HTTPByteClass.space, head.targetLength > 0 else { return .invalid }
      phase = .requestVersion
      matchIndex = 0
      return .more

    case .requestVersion:
      if matchIndex < 8 { return matchVersion(byte) }
      guard byte == HTTPByteClass.lf else { return .invalid }
      phase = .headerLineStart
      return .more

    case .statusVersion:
      if matchIndex < 8 { return matchVersion(byte) }
      guard byte == HTTPByteClass.space else { return .invalid }
      phase = .statusCode
      matchIndex = 0
      return .more

    case .statusCode:
      if let digit = HTTPByteClass.decimal(byte) {
        guard matchIndex < 3, matchIndex > 0 || digit > 0 else { return .invalid }
        head.status = head.status &* 10 &+ UInt16(digit)
        matchIndex &+= 1
        return .more
      }
      guard matchIndex == 3 else { return .invalid }
      if byte == HTTPByteClass.space {
        phase = .statusReason
        return .more
      }
      guard byte == HTTPByteClass.lf else { return .invalid }  // an empty reason without its SP
      phase = .headerLineStart
      return .more

    case .statusReason:
      if byte == HTTPByteClass.lf {
        phase = .headerLineStart
        return .more
      }
      return HTTPByteClass.isFieldText(byte) ? .more : .invalid

    default:
      return .invalid
    }
  }

  /// Matches byte ``matchIndex`` of `HTTP/1.x`, recording the minor version digit.
  @inline(__always)
  mutating func matchVersion(_ byte: UInt8) -> ScanOutcome {
    if matchIndex == 7 {
      guard let digit = HTTPByteClass.decimal(byte) else { return .invalid }
      head.minorVersion = UInt8(digit)
    } else if byte != HTTPByteClass.versionPrefix(matchIndex) {
      return .invalid
    }
    matchIndex &+= 1
    return .more
  }
}
