import Glibc

/// Removes secrets from an HTTP request target before it is recorded: the `target` of every
/// `HTTPRecord` passes through `redact(_:)`.
///
/// What is replaced with `REDACTED` (the rest of the path is kept as it is):
/// - **Query values and path parameters whose name looks secret** (`?token=…`, and
///   `;jsessionid=…` in a path segment, where servlet containers put the session). The name is percent-decoded, split into
///   words at punctuation and camelCase boundaries (`X-Amz-Signature` → `x amz signature`,
///   `apiKey` → `api key`) and lowercased. It is secret when
///   - its letters and digits joined contain one of `secretFragments` — `token`, `secret`,
///     `passw` (password, passwd), `passphrase`, `passcode`, `pwd`, `credential`, `signature`,
///     `apikey`, `accesskey`, `privatekey`, `session`, `sessid`, `jwt`, `bearer`, `cookie`,
///     `saml` — which covers `access_token`, `client_secret`, `X-Amz-Credential`, `X-Amz-Security-Token`,
///     `X-Goog-Signature`, `PHPSESSID`, `jsessionid`…; or
///   - one of its words is in `secretWords` — `key` (`api_key`, `key`), `sig` (Azure SAS),
///     `pass`, `code` (OAuth authorization and device codes, `code_verifier`), `otp`, `pin`,
///     `sid`, `hmac`, `ticket` (CAS), `assertion` (SAML/JWT grants), `nonce`; or
///   - one of its words starts with `auth` (`auth`, `authkey`, `authorization`) and is not
///     `author`, `authors`, `authored`, `authority`.
///   Whole words keep `keyword`, `monkey`, `zipcode` and `signal` readable; the price is
///   over-redaction of names like `country_code`, which is the safe direction.
/// - **Values that look like a JWT/JWS/JWE** whatever the name: three or five base64url parts
///   separated by dots, the first starting with `eyJ` (the base64url of `{"`). The `eyJ` test keeps
///   host names and version numbers (`www.example.com`, `1.2.3`) readable.
/// - **The fragment** (`#…`, which clients should not send but some do) gets the same treatment
///   as the query: OAuth's implicit flow puts `access_token` there.
/// - **User information in an absolute-form target** (`http://user:secret@host/…`, sent to
///   proxies): the password, or the whole user part when there is no `:` (a token used as a
///   user name, as in `https://TOKEN@host/`).
///
/// Empty values stay empty (nothing to hide), parameters without `=` stay as they are, and the
/// function is idempotent: `redact(redact(t)) == redact(t)`.
public enum TargetRedaction {
  /// What replaces a secret value.
  public static let placeholder = String(describing: placeholderText)

  /// Substrings of a name (letters and digits only, lowercased) that mark it as secret.
  public static let secretFragments = fragmentTexts.map(\.description)

  /// Whole words of a name that mark it as secret.
  public static let secretWords = Set(secretWordTexts.map(\.description))

  /// Words that start with `auth` but name no secret.
  static let authWordExceptions = Set(authWordExceptionTexts.map(\.description))

  // The lists as static bytes: the rules run on a target's bytes, with no `String` per parameter
  // and nothing retained per comparison.
  private static let fragmentTexts: [StaticString] = [
    "token", "secret", "passw", "passphrase", "passcode", "pwd", "credential", "signature", "apikey",
    "accesskey", "privatekey", "session", "sessid", "jwt", "bearer", "cookie", "saml",
  ]
  private static let secretWordTexts: [StaticString] = [
    "key", "sig", "pass", "code", "otp", "pin", "sid", "hmac", "ticket", "assertion", "nonce",
  ]
  private static let authWordExceptionTexts: [StaticString] = ["author", "authors", "authored", "authority"]

  /// The target with secret-looking values replaced by `placeholder`.
  ///
  /// - Parameter target: An HTTP/1.x request target: origin form (`/path?query`), absolute form
  ///   (`http://host/path?query`), or anything else (kept apart from its query and fragment).
  public static func redact(_ target: String) -> String {
    var target = target
    return target.withUTF8 { redact(UnsafeRawBufferPointer($0)) }
  }

  /// The target whose bytes `target` holds (as sent: any bytes), redacted, as text: invalid UTF-8
  /// becomes U+FFFD as with `String(decoding:as:)`, which gives the text `redact(_:)` gives for
  /// that decoded string. The separators are ASCII, and no ASCII byte is ever part of an invalid
  /// sequence, so the parts are the same either way.
  public static func redact(_ target: UnsafeRawBufferPointer) -> String {
    var names = SecretNameMemo()
    return redact(target, names: &names)
  }

  /// The same, the verdicts on parameter names taken from `names` when it has them, and kept there:
  /// a consumer of one server's records meets the same few names in nearly every target.
  static func redact(_ target: UnsafeRawBufferPointer, names: inout SecretNameMemo) -> String {
    // Most targets have none of `?`, `#`, `@` and `;`: they come back as they are.
    guard target.contains(where: { $0 == .question || $0 == .hash || $0 == .at || $0 == .semicolon }) else {
      return String(decoding: target, as: UTF8.self)
    }
    // Written on the stack, then made a string: no array allocated, grown or freed. A value
    // replaced is at least one byte (`=x`: two of the target's for each), the user information at
    // most once and maybe empty: the placeholder adds at most 8 bytes for each two and once more.
    let capacity = target.count &+ placeholderText.utf8CodeUnitCount &* (target.count / 2 &+ 2)
    return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: capacity) { scratch in
      var result = RedactedText(scratch)
      let pathEnd = target.firstIndex { $0 == .question || $0 == .hash } ?? target.endIndex
      appendRedactingPath(target[..<pathEnd], to: &result, names: &names)
      var start = pathEnd
      while start < target.endIndex {
        // `?query` up to `#`, or `#fragment` up to the end.
        let separator = target[start]
        let partEnd =
          separator == .question
          ? (target[(start + 1)...].firstIndex(ofByte: .hash) ?? target.endIndex) : target.endIndex
        result.append(separator)
        appendRedactingParameters(target[(start + 1)..<partEnd], to: &result, names: &names)
        start = partEnd
      }
      return String(decoding: result.written, as: UTF8.self)
    }
  }

  /// Whether a query parameter name looks like it carries a secret (see the type's rules).
  public static func isSecretName(_ name: some StringProtocol) -> Bool {
    var name = String(name)
    return name.withUTF8 { isSecretName(UnsafeRawBufferPointer($0)[...]) }
  }

  /// Whether a value looks like a JWT (JWS: three parts) or JWE (five parts): base64url parts
  /// separated by dots, the first starting with `eyJ`.
  public static func looksLikeJWT(_ value: some StringProtocol) -> Bool {
    var value = String(value)
    return value.withUTF8 { looksLikeJWT(UnsafeRawBufferPointer($0)[...]) }
  }

  /// Lowercased ASCII words (see ``splitWords(_:into:word:)``), as text.
  static func splitWords(_ name: String) -> [String] {
    let name = Array(name.utf8)
    var joined = [UInt8](repeating: 0, count: name.count)
    var ranges: [Range<Int>] = []
    _ = name.withUnsafeBufferPointer { name in
      joined.withUnsafeMutableBufferPointer { joined in
        splitWords(name, into: joined) { range in
          ranges.append(range)
          return false
        }
      }
    }
    return ranges.map { String(decoding: joined[$0], as: UTF8.self) }
  }

  // MARK: - Parts

  /// `name=value&…` with secret values replaced; separators and names kept byte for byte.
  private static func appendRedactingParameters(
    _ query: Bytes, to result: inout RedactedText, names: inout SecretNameMemo
  ) {
    var start = query.startIndex
    while true {
      let end = query[start...].firstIndex(ofByte: .ampersand) ?? query.endIndex
      appendRedactingParameter(query[start..<end], to: &result, names: &names)
      guard end < query.endIndex else { return }
      result.append(.ampersand)
      start = end + 1
    }
  }

  /// One `name=value`, its value replaced when secret; anything else as it is.
  private static func appendRedactingParameter(
    _ parameter: Bytes, to result: inout RedactedText, names: inout SecretNameMemo
  ) {
    if let equals = parameter.firstIndex(ofByte: .equals), equals + 1 < parameter.endIndex,
      names.isSecret(parameter[..<equals]) || looksLikeJWT(parameter[(equals + 1)...])
    {
      result.append(parameter[...equals])
      result.appendPlaceholder()
    } else {
      result.append(parameter)
    }
  }

  /// A path with the values of its secret path parameters replaced: `;name=value`, each up to the
  /// next `;` or `/`.
  private static func appendRedactingPathParameters(
    _ path: Bytes, to result: inout RedactedText, names: inout SecretNameMemo
  ) {
    var start = path.startIndex
    while let semicolon = path[start...].firstIndex(ofByte: .semicolon) {
      result.append(path[start...semicolon])
      let end = path[(semicolon + 1)...].firstIndex { $0 == .semicolon || $0 == .slash } ?? path.endIndex
      appendRedactingParameter(path[(semicolon + 1)..<end], to: &result, names: &names)
      start = end
    }
    result.append(path[start...])
  }

  /// The part before the query: the user information of an absolute-form target
  /// (`scheme://user:password@host/…`) redacted, and the path's secret parameters.
  private static func appendRedactingPath(_ path: Bytes, to result: inout RedactedText, names: inout SecretNameMemo) {
    guard let schemeEnd = schemeSeparator(in: path) else {
      return appendRedactingPathParameters(path, to: &result, names: &names)
    }
    let authorityStart = schemeEnd + 3
    let authorityEnd = path[authorityStart...].firstIndex(ofByte: .slash) ?? path.endIndex
    if let at = path[authorityStart..<authorityEnd].lastIndex(of: .at) {
      result.append(path[..<authorityStart])
      if let colon = path[authorityStart..<at].firstIndex(ofByte: .colon) {
        result.append(path[authorityStart...colon])
      }
      result.appendPlaceholder()
      result.append(path[at..<authorityEnd])
    } else {
      result.append(path[..<authorityEnd])
    }
    appendRedactingPathParameters(path[authorityEnd...], to: &result, names: &names)
  }

  /// The redacted target, written into a buffer on the stack sized for it (``redact(_:names:)``).
  private struct RedactedText {
    let buffer: UnsafeMutableBufferPointer<UInt8>
    private(set) var count = 0

    init(_ buffer: UnsafeMutableBufferPointer<UInt8>) { self.buffer = buffer }

    var written: UnsafeBufferPointer<UInt8> { UnsafeBufferPointer(rebasing: buffer[..<count]) }

    mutating func append(_ byte: UInt8) {
      precondition(count < buffer.count, "redaction overran its buffer")
      buffer[count] = byte
      count += 1
    }

    mutating func append(_ bytes: Bytes) {
      guard !bytes.isEmpty else { return }
      precondition(bytes.count <= buffer.count - count, "redaction overran its buffer")
      UnsafeMutableRawPointer(buffer.baseAddress! + count).copyMemory(
        from: bytes.base.baseAddress! + bytes.startIndex, byteCount: bytes.count)
      count += bytes.count
    }

    mutating func appendPlaceholder() {
      placeholderText.withUTF8Buffer { append(UnsafeRawBufferPointer($0)[...]) }
    }
  }

  private static let placeholderText: StaticString = "REDACTED"

  /// A run of a target's bytes.
  fileprivate typealias Bytes = Slice<UnsafeRawBufferPointer>

  // The bytes of a name or value are decoded into a buffer on the stack, and a name's words
  // into the same buffer after them: nothing allocated per parameter.

  fileprivate static func isSecretName(_ name: Bytes) -> Bool {
    withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 2 * name.count + 1) { scratch in
      let decoded = percentDecode(name, into: scratch)
      let joined = UnsafeMutableBufferPointer(rebasing: scratch[decoded.count...])
      guard let count = splitWords(decoded, into: joined, word: { isSecretWord(UnsafeBufferPointer(rebasing: joined[$0])) })
      else { return true }
      let words = UnsafeBufferPointer(rebasing: joined[..<count])
      return containsFragment(words)
    }
  }

  /// Whether one word (lowercased) is secret by itself: one of `secretWords`, or `auth…` but for
  /// `authWordExceptions`.
  private static func isSecretWord(_ word: UnsafeBufferPointer<UInt8>) -> Bool {
    if word.count < 64, secretWordLengths >> UInt64(word.count) & 1 != 0,
      secretWordTexts.contains(where: { equal(word, $0) })
    {
      return true
    }
    return word.count >= 4 && memcmp(word.baseAddress!, "auth", 4) == 0
      && !authWordExceptionTexts.contains { equal(word, $0) }
  }

  /// Bit n is set when a secret word is n bytes long: most words are none of those lengths, and
  /// are not compared with any.
  private static let secretWordLengths = secretWordTexts.reduce(UInt64(0)) { $0 | 1 << UInt64($1.utf8CodeUnitCount) }

  private static func equal(_ word: UnsafeBufferPointer<UInt8>, _ text: StaticString) -> Bool {
    word.count == text.utf8CodeUnitCount && memcmp(word.baseAddress!, text.utf8Start, word.count) == 0
  }

  private static func looksLikeJWT(_ value: Bytes) -> Bool {
    // Decoded, it starts with `e`: so does the value, or it starts with an escape.
    guard let first = value.first, first == .lowerE || first == .percent else { return false }
    return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: value.count + 1) { scratch in
      let decoded = percentDecode(value, into: scratch)
      guard decoded.starts(with: [.lowerE, .lowerY, .upperJ]) else { return false }
      var dots = 0
      var firstDot = 0
      var secondDot = 0
      for (index, byte) in decoded.enumerated() {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
          UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"), .equals:
          continue
        case .dot:
          dots += 1
          if dots == 1 { firstDot = index } else if dots == 2 { secondDot = index }
        default:
          return false
        }
      }
      // Three or five parts, the first of at least four bytes, the second not empty.
      return (dots == 2 || dots == 4) && firstDot >= 4 && secondDot > firstDot + 1
    }
  }

  /// Bit n is set when a fragment starts with the letter `a` + n (they all start with a letter).
  private static let fragmentInitials = fragmentTexts.reduce(UInt32(0)) {
    $0 | 1 << UInt32($1.utf8Start.pointee &- UInt8(ascii: "a"))
  }

  /// Whether one of `secretFragments` is in `words` (lowercased letters and digits): only the
  /// fragments starting with a position's letter are compared there.
  private static func containsFragment(_ words: UnsafeBufferPointer<UInt8>) -> Bool {
    for start in words.indices {
      let letter = words[start] &- UInt8(ascii: "a")
      guard letter < 26, fragmentInitials >> UInt32(letter) & 1 != 0 else { continue }
      for fragment in fragmentTexts where fragment.utf8Start.pointee == words[start] {
        let length = fragment.utf8CodeUnitCount
        if words.count - start >= length && memcmp(words.baseAddress! + start, fragment.utf8Start, length) == 0 {
          return true
        }
      }
    }
    return false
  }

  /// Where the first `://` starts in `text`; `nil` when there is none.
  private static func schemeSeparator(in text: Bytes) -> Int? {
    var start = text.startIndex
    while let colon = text[start...].firstIndex(ofByte: .colon) {
      if colon + 2 < text.endIndex && text[colon + 1] == .slash && text[colon + 2] == .slash { return colon }
      start = colon + 1
    }
    return nil
  }

  // MARK: - Names

  /// `text` with `%XX` decoded and `+` read as a space, as in `application/x-www-form-urlencoded`,
  /// written at the start of `buffer` (at least `text.count` bytes).
  @inline(__always)
  private static func percentDecode(_ text: Bytes, into buffer: UnsafeMutableBufferPointer<UInt8>)
    -> UnsafeBufferPointer<UInt8>
  {
    PercentDecoding.decode(text, plusIsSpace: true, into: buffer)
  }

  /// Splits `name` into lowercased ASCII words: at anything that is not a letter or digit, before
  /// an uppercase letter that follows a lowercase one (`apiKey`), and before the last capital of an
  /// acronym followed by lowercase (`APIKey` → `api key`). The words are written one after another
  /// into `joined` (at least `name.count` bytes), and `word` is called with each one's range there;
  /// when it returns true the split stops and returns nil. Otherwise returns the bytes written.
  static func splitWords(
    _ name: UnsafeBufferPointer<UInt8>, into joined: UnsafeMutableBufferPointer<UInt8>, word: (Range<Int>) -> Bool
  ) -> Int? {
    func isUpper(_ b: UInt8) -> Bool { b >= UInt8(ascii: "A") && b <= UInt8(ascii: "Z") }
    func isLower(_ b: UInt8) -> Bool { b >= UInt8(ascii: "a") && b <= UInt8(ascii: "z") }
    func isDigit(_ b: UInt8) -> Bool { b >= UInt8(ascii: "0") && b <= UInt8(ascii: "9") }
    var count = 0
    var wordStart = 0
    // Ends the word in progress; true when `word` stops the split.
    func finish() -> Bool {
      defer { wordStart = count }
      return count > wordStart && word(wordStart..<count)
    }
    for (index, byte) in name.enumerated() {
      guard isUpper(byte) || isLower(byte) || isDigit(byte) else {
        if finish() { return nil }
        continue
      }
      if isUpper(byte), index > 0 {
        let previous = name[index - 1]
        let nextIsLower = index + 1 < name.count && isLower(name[index + 1])
        if isLower(previous) || isDigit(previous) || (isUpper(previous) && nextIsLower), finish() { return nil }
      }
      joined[count] = isUpper(byte) ? byte + 32 : byte
      count += 1
    }
    return finish() ? nil : count
  }
}

/// What ``TargetRedaction`` said of the last parameter names it read (up to 8, of up to 32 bytes
/// each): a server's targets vary in their values far more than in their names, and reading a
/// name (decoding its escapes, splitting it into words, looking for the fragments) cost more than
/// the rest of a target's redaction. One per record stream: not shared between threads.
struct SecretNameMemo {
  private static let slots = 8
  private static let nameCapacity = 32
  private var names = InlineArray<256, UInt8>(repeating: 0)
  /// Each slot's name length; -1 for a slot not used yet.
  private var lengths = InlineArray<8, Int8>(repeating: -1)
  /// Bit i: slot i's name is secret.
  private var secret: UInt8 = 0
  /// The slot the next new name takes.
  private var next = 0

  init() {}

  /// ``TargetRedaction/isSecretName(_:)`` of `name`, from the memo when it has the name.
  fileprivate mutating func isSecret(_ name: Slice<UnsafeRawBufferPointer>) -> Bool {
    let bytes = UnsafeRawBufferPointer(rebasing: name)
    guard bytes.count <= Self.nameCapacity else { return TargetRedaction.isSecretName(name) }
    let found = withUnsafeBytes(of: &names) { names -> Int? in
      for slot in 0..<Self.slots where Int(lengths[slot]) == bytes.count {
        if bytes.isEmpty || memcmp(names.baseAddress! + slot * Self.nameCapacity, bytes.baseAddress!, bytes.count) == 0 {
          return slot
        }
      }
      return nil
    }
    if let found { return secret >> UInt8(found) & 1 != 0 }
    let verdict = TargetRedaction.isSecretName(name)
    let slot = next
    next = (next + 1) % Self.slots
    withUnsafeMutableBytes(of: &names) { names in
      if !bytes.isEmpty { (names.baseAddress! + slot * Self.nameCapacity).copyMemory(from: bytes.baseAddress!, byteCount: bytes.count) }
    }
    lengths[slot] = Int8(bytes.count)
    secret = verdict ? secret | 1 << UInt8(slot) : secret & ~(1 << UInt8(slot))
    return verdict
  }
}

extension Slice where Base == UnsafeRawBufferPointer {
  /// The index of the first `byte` (`memchr`: the generic `firstIndex(of:)` costs ~10 times more).
  fileprivate func firstIndex(ofByte byte: UInt8) -> Int? {
    guard !isEmpty, let found = memchr(base.baseAddress! + startIndex, Int32(byte), count) else { return nil }
    return UnsafeRawPointer(found) - base.baseAddress!
  }
}

extension UInt8 {
  fileprivate static let question = UInt8(ascii: "?")
  fileprivate static let hash = UInt8(ascii: "#")
  fileprivate static let at = UInt8(ascii: "@")
  fileprivate static let ampersand = UInt8(ascii: "&")
  fileprivate static let semicolon = UInt8(ascii: ";")
  fileprivate static let equals = UInt8(ascii: "=")
  fileprivate static let colon = UInt8(ascii: ":")
  fileprivate static let slash = UInt8(ascii: "/")
  fileprivate static let dot = UInt8(ascii: ".")
  fileprivate static let percent = UInt8(ascii: "%")
  fileprivate static let lowerE = UInt8(ascii: "e")
  fileprivate static let lowerY = UInt8(ascii: "y")
  fileprivate static let upperJ = UInt8(ascii: "J")
}
