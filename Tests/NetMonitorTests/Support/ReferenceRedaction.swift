@testable import NetMonitor

/// The String-based redaction `TargetRedaction` was until its rules moved to bytes, kept verbatim as
/// the oracle `RedactionTests` compares the byte version with on many generated targets: the same
/// rules (see `TargetRedaction`), written the obvious way.
enum ReferenceRedaction {
  // The rules' lists are TargetRedaction's own: only the algorithm is the reference's.
  static let placeholder = TargetRedaction.placeholder
  static let secretWords = TargetRedaction.secretWords
  static let authWordExceptions = TargetRedaction.authWordExceptions
  static let secretFragmentBytes = TargetRedaction.secretFragments.map { Array($0.utf8) }

  /// The target with secret-looking values replaced by `placeholder`.
  ///
  /// - Parameter target: An HTTP/1.x request target: origin form (`/path?query`), absolute form
  ///   (`http://host/path?query`), or anything else (kept apart from its query and fragment).
  static func redact(_ target: String) -> String {
    let utf8 = target.utf8
    let mayHaveSecrets = { (byte: UInt8) in
      byte == UInt8(ascii: "?") || byte == UInt8(ascii: "#") || byte == UInt8(ascii: "@") || byte == UInt8(ascii: ";")
    }
    // Most targets have none of the four: found out on the bytes in place, once per record.
    guard
      utf8.withContiguousStorageIfAvailable({ $0.contains(where: mayHaveSecrets) })
        ?? utf8.contains(where: mayHaveSecrets)
    else { return target }

    var result = ""
    result.reserveCapacity(utf8.count + 16)
    let pathEnd = target.firstIndex { $0 == "?" || $0 == "#" } ?? target.endIndex
    result += redactPath(target[..<pathEnd])
    var rest = target[pathEnd...]
    while let separator = rest.first {
      // `?query` up to `#`, or `#fragment` up to the end.
      let partEnd =
        separator == "?"
        ? (rest.dropFirst().firstIndex(of: "#") ?? rest.endIndex) : rest.endIndex
      result.append(separator)
      result += redactParameters(rest[rest.index(after: rest.startIndex)..<partEnd])
      rest = rest[partEnd...]
    }
    return result
  }

  /// Whether a query parameter name looks like it carries a secret (see the type's rules).
  static func isSecretName(_ name: some StringProtocol) -> Bool {
    let decoded = percentDecoded(name)
    let words = splitWords(decoded)
    let joined = Array(words.joined().utf8)
    for fragment in secretFragmentBytes where contains(joined, fragment) { return true }
    for word in words {
      if secretWords.contains(word) { return true }
      if word.hasPrefix("auth") && !authWordExceptions.contains(word) { return true }
    }
    return false
  }

  /// Whether a value looks like a JWT (JWS: three parts) or JWE (five parts): base64url parts
  /// separated by dots, the first starting with `eyJ`.
  static func looksLikeJWT(_ value: some StringProtocol) -> Bool {
    let decoded = percentDecoded(value)
    let parts = decoded.split(separator: ".", omittingEmptySubsequences: false)
    guard parts.count == 3 || parts.count == 5 else { return false }
    guard parts[0].count >= 4, parts[0].hasPrefix("eyJ"), !parts[1].isEmpty else { return false }
    for part in parts {
      for byte in part.utf8 {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
          UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"),
          UInt8(ascii: "="):
          continue
        default:
          return false
        }
      }
    }
    return true
  }

  // MARK: - Parts

  /// `name=value&…` with secret values replaced; separators and names kept byte for byte.
  static func redactParameters(_ query: Substring) -> String {
    var result = ""
    result.reserveCapacity(query.utf8.count)
    var first = true
    for parameter in query.split(separator: "&", omittingEmptySubsequences: false) {
      if !first { result.append("&") }
      first = false
      result += redactParameter(parameter)
    }
    return result
  }

  /// One `name=value`, its value replaced when secret.
  static func redactParameter(_ parameter: Substring) -> String {
    guard let equals = parameter.firstIndex(of: "=") else { return String(parameter) }
    let name = parameter[..<equals]
    let value = parameter[parameter.index(after: equals)...]
    guard !value.isEmpty && (isSecretName(name) || looksLikeJWT(value)) else { return String(parameter) }
    return name + "=" + placeholder
  }

  /// The part before the query: user information (`redactUserInfo`) in the authority of an
  /// absolute-form target, then the path's segments, each's `;name=value` parameters redacted.
  static func redactPath(_ path: Substring) -> String {
    var pathStart = path.startIndex
    if let offset = firstOffset(of: Array("://".utf8), in: Array(path.utf8)) {
      let authorityStart = path.utf8.index(path.utf8.startIndex, offsetBy: offset + 3)
      pathStart = path[authorityStart...].firstIndex(of: "/") ?? path.endIndex
    }
    let segments = path[pathStart...].split(separator: "/", omittingEmptySubsequences: false).map { segment in
      let pieces = segment.split(separator: ";", omittingEmptySubsequences: false)
      return ([String(pieces[0])] + pieces.dropFirst().map(redactParameter)).joined(separator: ";")
    }
    return redactUserInfo(path[..<pathStart]) + segments.joined(separator: "/")
  }

  /// The user information of an absolute-form target (`scheme://user:password@host/…`)
  /// redacted; anything else unchanged.
  static func redactUserInfo(_ path: Substring) -> String {
    // Searched in the bytes, not with `firstRange(of:)`, which builds a search table at every
    // call (~9,000 instructions). `://` is ASCII: its bytes end on a character boundary.
    let separator = Array("://".utf8)
    guard let offset = firstOffset(of: separator, in: Array(path.utf8)) else { return String(path) }
    let authorityStart = path.utf8.index(path.utf8.startIndex, offsetBy: offset + separator.count)
    let authorityEnd = path[authorityStart...].firstIndex(of: "/") ?? path.endIndex
    let authority = path[authorityStart..<authorityEnd]
    guard let at = authority.lastIndex(of: "@") else { return String(path) }
    let userInfo = authority[..<at]
    var result = String(path[..<authorityStart])
    if let colon = userInfo.firstIndex(of: ":") {
      result += userInfo[..<colon]
      result += ":"
    }
    result += placeholder
    result += path[at...]
    return result
  }

  /// Whether `text` contains the bytes of `fragment`. What `String.contains(_:)` answers for
  /// ASCII text (a name's joined words are lowercased ASCII letters and digits), without the
  /// search table it builds at every call: ~9,000 instructions, 17 fragments per query parameter
  /// of every distinct target.
  static func contains(_ text: [UInt8], _ fragment: [UInt8]) -> Bool {
    firstOffset(of: fragment, in: text) != nil
  }

  /// Where the bytes of `fragment` first start in `text`; `nil` when they are not in it.
  static func firstOffset(of fragment: [UInt8], in text: [UInt8]) -> Int? {
    guard !fragment.isEmpty else { return 0 }
    guard text.count >= fragment.count else { return nil }
    for start in 0...(text.count - fragment.count) where text[start] == fragment[0] {
      if text[start..<(start + fragment.count)].elementsEqual(fragment) { return start }
    }
    return nil
  }

  // MARK: - Names

  /// `%XX` decoded and `+` read as a space, as in `application/x-www-form-urlencoded`;
  /// malformed escapes kept as they are.
  static func percentDecoded(_ text: some StringProtocol) -> String {
    let utf8 = Array(text.utf8)
    guard utf8.contains(where: { $0 == UInt8(ascii: "%") || $0 == UInt8(ascii: "+") }) else {
      return String(text)
    }
    var bytes: [UInt8] = []
    bytes.reserveCapacity(utf8.count)
    var index = 0
    while index < utf8.count {
      let byte = utf8[index]
      if byte == UInt8(ascii: "%"), index + 2 < utf8.count,
        let high = hexValue(utf8[index + 1]), let low = hexValue(utf8[index + 2])
      {
        bytes.append(high << 4 | low)
        index += 3
      } else {
        bytes.append(byte == UInt8(ascii: "+") ? UInt8(ascii: " ") : byte)
        index += 1
      }
    }
    return String(decoding: bytes, as: UTF8.self)
  }

  static func hexValue(_ byte: UInt8) -> UInt8? {
    switch byte {
    case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
    case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
    case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
    default: nil
    }
  }

  /// Lowercased ASCII words: split at anything that is not a letter or digit, before an
  /// uppercase letter that follows a lowercase one (`apiKey`), and before the last capital of
  /// an acronym followed by lowercase (`APIKey` → `api key`).
  static func splitWords(_ name: String) -> [String] {
    var words: [String] = []
    var current: [UInt8] = []
    let bytes = Array(name.utf8)
    func isUpper(_ b: UInt8) -> Bool { b >= UInt8(ascii: "A") && b <= UInt8(ascii: "Z") }
    func isLower(_ b: UInt8) -> Bool { b >= UInt8(ascii: "a") && b <= UInt8(ascii: "z") }
    func isDigit(_ b: UInt8) -> Bool { b >= UInt8(ascii: "0") && b <= UInt8(ascii: "9") }
    func finish() {
      if !current.isEmpty { words.append(String(decoding: current, as: UTF8.self)) }
      current.removeAll(keepingCapacity: true)
    }
    for (index, byte) in bytes.enumerated() {
      guard isUpper(byte) || isLower(byte) || isDigit(byte) else {
        finish()
        continue
      }
      if isUpper(byte), index > 0 {
        let previous = bytes[index - 1]
        let nextIsLower = index + 1 < bytes.count && isLower(bytes[index + 1])
        if isLower(previous) || isDigit(previous) || (isUpper(previous) && nextIsLower) { finish() }
      }
      current.append(isUpper(byte) ? byte + 32 : byte)
    }
    finish()
    return words
  }
}
