/// Statistics per key (host, endpoint) that remembers the last key it was asked for: a stream of
/// records mostly repeats its last host and endpoint, and then the key is compared, not hashed.
/// `elfhook run` adds every record of a busy server to two of these.
struct KeyedStats<Key: Hashable, Stats> {
  private var positions: [Key: Int] = [:]
  private var keys: [Key] = []
  private var values: [Stats] = []
  /// The key last updated or found, and its position in `keys` and `values`.
  private var last: (key: Key, position: Int)?

  var count: Int { keys.count }

  subscript(key: Key) -> Stats? { position(of: key).map { values[$0] } }

  func contains(_ key: Key) -> Bool { position(of: key) != nil }

  /// The key in row `position` (from `row(of:initial:)`).
  func key(at position: Int) -> Key { keys[position] }

  /// Every key with its statistics.
  var dictionary: [Key: Stats] { Dictionary(uniqueKeysWithValues: zip(keys, values)) }

  /// Updates the statistics of `key`, starting from `initial` for a new key.
  mutating func update(_ key: Key, initial: @autoclosure () -> Stats, _ body: (inout Stats) -> Void) {
    update(at: row(of: key, initial: initial()), body)
  }

  /// Where the statistics of `key` are, starting from `initial` for a new key: a row stays where
  /// it is, so a caller that keeps it can update the key again without looking it up.
  mutating func row(of key: Key, initial: @autoclosure () -> Stats) -> Int {
    let position: Int
    if let found = self.position(of: key) {
      position = found
    } else {
      position = keys.count
      keys.append(key)
      values.append(initial())
      positions[key] = position
    }
    last = (key, position)
    return position
  }

  /// Updates the statistics in row `position` (from `row(of:initial:)`).
  mutating func update(at position: Int, _ body: (inout Stats) -> Void) {
    body(&values[position])
  }

  private func position(of key: Key) -> Int? {
    if let last, last.key == key { return last.position }
    return positions[key]
  }
}
