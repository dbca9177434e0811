/// Why `Transaction(jsonLine:)` rejected a line. Decoding never traps: every malformed input ends
/// in one of these.
public enum RecordDecodingError: Error, Hashable, CustomStringConvertible {
  /// The line is not valid JSON; `offset` is the byte where reading stopped.
  case malformedJSON(offset: Int, reason: String)
  /// The line is JSON, but not an object.
  case notAnObject
  /// A required field is absent.
  case missingField(String)
  /// A field has the wrong JSON type (`expected` says which one it needs).
  case wrongType(field: String, expected: String)
  /// A field has the right type but an impossible value (a negative byte count, an unknown role,
  /// a port above 65535…).
  case invalidValue(field: String, value: String)
  /// `kind` is none of `dns`, `connection`, `http`.
  case unknownKind(String)

  public var description: String {
    switch self {
    case .malformedJSON(let offset, let reason): "malformed JSON at byte \(offset): \(reason)"
    case .notAnObject: "the line is not a JSON object"
    case .missingField(let field): "missing field '\(field)'"
    case .wrongType(let field, let expected): "field '\(field)' is not \(expected)"
    case .invalidValue(let field, let value): "field '\(field)' has an invalid value: \(value)"
    case .unknownKind(let kind): "unknown record kind '\(kind)'"
    }
  }
}
