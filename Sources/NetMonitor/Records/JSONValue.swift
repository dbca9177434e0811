/// A parsed JSON value, as `JSONParser` reads it: only what decoding records needs.
enum JSONValue: Equatable {
  case null
  case bool(Bool)
  /// The number's text exactly as written (already checked against JSON's number grammar), so
  /// integers convert without passing through `Double`.
  case number(String)
  case string(String)
  case array([JSONValue])
  /// Members in order of appearance; duplicate keys are kept (lookups take the last one).
  case object([(key: String, value: JSONValue)])

  static func == (lhs: JSONValue, rhs: JSONValue) -> Bool {
    switch (lhs, rhs) {
    case (.null, .null): true
    case (.bool(let a), .bool(let b)): a == b
    case (.number(let a), .number(let b)): a == b
    case (.string(let a), .string(let b)): a == b
    case (.array(let a), .array(let b)): a == b
    case (.object(let a), .object(let b)):
      a.count == b.count && zip(a, b).allSatisfy { $0.key == $1.key && $0.value == $1.value }
    default: false
    }
  }
}
