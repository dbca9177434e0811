/// The little a response parser must know about the request it answers: a response to `HEAD` has no
/// body whatever its headers say, and a 2xx response to `CONNECT` turns the connection into a tunnel.
///
/// The caller reports each request to the response direction's parser with
/// ``HTTPStreamParser/expectResponse(to:)`` when the request direction's parser emits
/// ``HTTPStreamEvent/headComplete``; ``HTTPHead/requestKind`` computes it from a request head.
public enum HTTPRequestKind: UInt8, Sendable {
  /// Any method other than `HEAD` and `CONNECT`: the response's headers frame its body.
  case ordinary = 0
  /// `HEAD`: the response has no body.
  case head = 1
  /// `CONNECT`: a 2xx response has no body and starts a tunnel.
  case connect = 2
}
