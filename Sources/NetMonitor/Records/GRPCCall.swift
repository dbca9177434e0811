/// A gRPC call, as its http record shows it: an HTTP/2 stream whose response carried a
/// `grpc-status`, to a target `/package.Service/Method`. What the report, the spans and the
/// metrics (`rpc.*`) read of one.
public struct GRPCCall: Sendable {
  /// `package.Service`, as OpenTelemetry's `rpc.service`.
  public var service: String
  /// `Method`, as `rpc.method`.
  public var method: String
  /// The call's status code (`rpc.grpc.status_code`).
  public var status: Int
  /// Its `grpc-message` as the sender wrote it: the record keeps it as sent, percent-encoded.
  public var message: String?

  /// The call `http` is; `nil` when it is not one (no `grpc-status`, another target shape).
  public init?(_ http: HTTPRecord) {
    guard let status = http.grpcStatus else { return nil }
    let parts = http.target.split(separator: "/", omittingEmptySubsequences: true)
    guard http.target.hasPrefix("/"), parts.count == 2 else { return nil }
    self.service = String(parts[0])
    self.method = String(parts[1])
    self.status = status
    self.message = http.grpcMessage.map(Self.percentDecoded)
  }

  /// `text` with gRPC's percent-encoding undone (PROTOCOL-HTTP2: a `grpc-message` carries each
  /// byte outside printable ASCII, and `%`, as `%` and two hex digits); a `%` not followed by two
  /// hex digits stays as it is, and bytes that are no UTF-8 read as U+FFFD.
  public static func percentDecoded(_ text: String) -> String { PercentDecoding.decoded(text) }

  /// The name gRPC gives a status code (`NOT_FOUND`), or the number for one it does not name.
  public static func statusName(_ code: Int) -> String {
    let names = [
      "OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED", "NOT_FOUND", "ALREADY_EXISTS",
      "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION", "ABORTED", "OUT_OF_RANGE", "UNIMPLEMENTED",
      "INTERNAL", "UNAVAILABLE", "DATA_LOSS", "UNAUTHENTICATED",
    ]
    return names.indices.contains(code) ? names[code] : String(code)
  }
}
