import OTLPProto

/// The value of a span or metric attribute: OTLP's `AnyValue`, restricted to the scalar kinds
/// the exporter writes. Codable, so that metric streams keyed by attributes persist in the state file.
enum AttributeValue: Hashable, Codable, Sendable {
  case string(String)
  case int(Int64)
  case double(Double)
  case bool(Bool)

  /// The OTLP `AnyValue`.
  var otlp: OTLPAnyValue {
    var value = OTLPAnyValue()
    switch self {
    case .string(let text): value.stringValue = text
    case .int(let number): value.intValue = number
    case .double(let number): value.doubleValue = number
    case .bool(let flag): value.boolValue = flag
    }
    return value
  }
}

/// One attribute: a key from the OpenTelemetry semantic conventions (or `elfhook.*`) and a value.
struct Attribute: Hashable, Codable, Sendable {
  var key: String
  var value: AttributeValue

  init(_ key: String, _ value: AttributeValue) {
    self.key = key
    self.value = value
  }

  /// The OTLP `KeyValue`.
  var otlp: OTLPKeyValue {
    var keyValue = OTLPKeyValue()
    keyValue.key = key
    keyValue.value = value.otlp
    return keyValue
  }
}

/// Builds an attribute list, leaving out the values that are `nil` (a record's fields that do not
/// apply are absent, never invented).
struct AttributeList {
  private(set) var attributes: [Attribute] = []

  mutating func add(_ key: String, _ value: String?) {
    if let value { attributes.append(Attribute(key, .string(value))) }
  }

  mutating func add<Number: BinaryInteger>(_ key: String, _ value: Number?) {
    if let value { attributes.append(Attribute(key, .int(Int64(value)))) }
  }

  mutating func add(_ key: String, _ value: Double?) {
    if let value { attributes.append(Attribute(key, .double(value))) }
  }

  mutating func add(_ key: String, _ value: Bool) {
    attributes.append(Attribute(key, .bool(value)))
  }

  /// Adds every attribute of `other`, after these.
  mutating func append(_ other: AttributeList) {
    attributes += other.attributes
  }

  /// The attributes as OTLP `KeyValue`s, in the order they were added.
  var otlp: [OTLPKeyValue] { attributes.map(\.otlp) }
}
