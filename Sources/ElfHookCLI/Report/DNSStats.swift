import NetMonitor

/// `getaddrinfo` calls: all of them, or those for one name.
struct DNSStats {
  private(set) var lookups = 0
  private(set) var failures = 0
  private(set) var durations = DurationSamples()

  mutating func add(_ lookup: DNSRecord) {
    lookups += 1
    if lookup.error != nil { failures += 1 }
    durations.add(lookup.durationMs)
  }
}
