/// Rows laid out in aligned columns for a terminal: text left-aligned, numbers right-aligned. When
/// the rows are wider than the terminal, the columns in `dropOrder` are left out one by one, then
/// one flexible column (the names) is cut short with `…`.
struct TextTable {
  enum Alignment {
    case left
    case right
  }

  struct Column {
    var title: String
    var alignment: Alignment
  }

  struct Cell {
    var text: String
    var style: TerminalStyle.Code?

    init(_ text: String, _ style: TerminalStyle.Code? = nil) {
      self.text = text
      self.style = style
    }
  }

  var columns: [Column]
  var rows: [[Cell]] = []
  var flexibleColumn: Int
  /// Titles of the columns a narrow terminal can do without, least needed first.
  var dropOrder: [String]

  static let gap = "  "
  static let indent = "  "
  /// How wide the flexible column should stay: columns in `dropOrder` give way before names are cut
  /// shorter than this.
  static let readableWidth = 24
  /// The flexible column is never cut shorter than this.
  static let minimumWidth = 8

  init(_ columns: [(String, Alignment)], flexibleColumn: Int = 0, dropOrder: [String] = []) {
    self.columns = columns.map { Column(title: $0.0, alignment: $0.1) }
    self.flexibleColumn = flexibleColumn
    self.dropOrder = dropOrder
  }

  mutating func append(_ row: [Cell]) {
    precondition(row.count == columns.count, "a row needs one cell per column")
    rows.append(row)
  }

  /// The heading line and one line per row, none wider than `width` unless even the narrowest
  /// layout is wider.
  func lines(width: Int, style: TerminalStyle) -> [String] {
    var widths = columns.indices.map { column in
      rows.reduce(columns[column].title.count) { max($0, $1[column].text.count) }
    }
    var shown = Array(columns.indices)
    func total() -> Int {
      Self.indent.count + shown.map { widths[$0] }.reduce(0, +) + Self.gap.count * (shown.count - 1)
    }
    let readable = min(widths[flexibleColumn], Self.readableWidth)
    for title in dropOrder where total() - widths[flexibleColumn] + readable > width {
      shown.removeAll { columns[$0].title == title }
    }
    if total() > width {
      widths[flexibleColumn] = max(
        min(widths[flexibleColumn], Self.minimumWidth), widths[flexibleColumn] - (total() - width))
    }
    let heading = columns.map { Cell($0.title, .bold) }
    return ([heading] + rows).map { row in
      let cells = shown.map { index in
        style.paint(
          layout(row[index].text, column: index, width: widths[index], last: index == shown.last), row[index].style)
      }
      return Self.indent + cells.joined(separator: Self.gap)
    }
  }

  /// The text cut to `width` and padded on its alignment's side; the last column, when
  /// left-aligned, is not padded (no trailing spaces).
  private func layout(_ text: String, column: Int, width: Int, last: Bool) -> String {
    let fitted = text.count > width ? String(text.prefix(width - 1)) + "…" : text
    let padding = String(repeating: " ", count: width - fitted.count)
    switch columns[column].alignment {
    case .right: return padding + fitted
    case .left: return last ? fitted : fitted + padding
    }
  }
}
