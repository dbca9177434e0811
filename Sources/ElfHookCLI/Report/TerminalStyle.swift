/// ANSI styles for terminal text. With `color` off (output to a pipe or a file, `NO_COLOR` set)
/// every style is a no-op, so text that is painted and text that is not line up the same.
struct TerminalStyle {
  enum Code: String {
    case bold = "1"
    case dim = "2"
    case red = "31"
    case green = "32"
    case yellow = "33"
    case blue = "34"
    case magenta = "35"
    case cyan = "36"
  }

  var color: Bool

  func paint(_ text: String, _ code: Code?) -> String {
    guard color, let code, !text.isEmpty else { return text }
    return "\u{1B}[\(code.rawValue)m\(text)\u{1B}[0m"
  }
}

extension RequestPhase {
  /// The phase's color in a terminal, close to its color in the HTML report.
  var terminalColor: TerminalStyle.Code {
    switch self {
    case .dns: .cyan
    case .connect: .yellow
    case .tls: .magenta
    case .wait: .green
    case .transfer: .blue
    }
  }

  /// `d DNS  c connect  t TLS  w wait  r transfer`, each symbol in its color.
  static func legend(_ style: TerminalStyle) -> String {
    allCases.map { style.paint(String($0.symbol), $0.terminalColor) + " " + $0.name }.joined(separator: "  ")
  }
}
