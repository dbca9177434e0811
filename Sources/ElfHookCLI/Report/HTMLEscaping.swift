/// `text` safe to put in HTML text or in a quoted attribute value: `& < > " '` become character
/// references, and control characters (invalid in HTML) become U+FFFD.
///
/// Every string the report takes from a record goes through here: hosts, targets and messages
/// are whatever the monitored process sent or received.
func htmlEscaped(_ text: String) -> String {
  var escaped = ""
  escaped.reserveCapacity(text.utf8.count)
  for scalar in text.unicodeScalars {
    switch scalar {
    case "&": escaped += "&amp;"
    case "<": escaped += "&lt;"
    case ">": escaped += "&gt;"
    case "\"": escaped += "&quot;"
    case "'": escaped += "&#39;"
    case "\t", "\n": escaped.unicodeScalars.append(scalar)
    case _ where scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value): escaped += "\u{FFFD}"
    default: escaped.unicodeScalars.append(scalar)
    }
  }
  return escaped
}
