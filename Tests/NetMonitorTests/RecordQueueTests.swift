import CNetMonitor
import Testing

/// The bounded queue records go through, alone: its slots' sequence numbers are kept less their
/// index, so that zeroed memory is an empty queue; these follow a small queue through laps.
@Suite("Record queue: laps, full, order")
struct RecordQueueTests {
  @Test("four laps of a queue of four slots: full at four, published in order, free once released")
  func laps() throws {
    let capacity = 4
    let queue = try #require(cnm_queue_create(capacity, 64))
    var written: UInt64 = 0
    for lap in 0..<4 {
      var tickets: [UInt64] = []
      for _ in 0..<capacity {
        var ticket: UInt64 = 0
        let slot = try #require(cnm_queue_reserve(queue, &ticket), "lap \(lap)")
        #expect(ticket == written)
        slot.storeBytes(of: ticket, as: UInt64.self)
        tickets.append(ticket)
        written += 1
      }
      var ticket: UInt64 = 0
      #expect(cnm_queue_reserve(queue, &ticket) == nil, "lap \(lap): full")
      // Reserved, not published: the consumer sees nothing yet, and knows a slot is unpublished.
      #expect(cnm_queue_peek(queue) == nil)
      #expect(cnm_queue_has_unpublished(queue))
      for ticket in tickets.reversed() { cnm_queue_publish(queue, ticket) }
      for ticket in tickets {
        #expect(cnm_queue_published_slot(queue, ticket)?.load(as: UInt64.self) == ticket)
        let slot = try #require(cnm_queue_peek(queue))
        #expect(slot.load(as: UInt64.self) == ticket)
        cnm_queue_release(queue)
      }
      #expect(cnm_queue_peek(queue) == nil)
      #expect(!cnm_queue_has_unpublished(queue))
      // A released slot is not published at the next lap's position until written again.
      #expect(cnm_queue_published_slot(queue, written) == nil)
    }
    #expect(cnm_queue_read_position(queue) == written && cnm_queue_write_position(queue) == written)
  }

  @Test("a slot skipped unpublished (its producer killed) is free again at the next lap")
  func skipped() throws {
    let queue = try #require(cnm_queue_create(2, 64))
    var first: UInt64 = 0, second: UInt64 = 0
    _ = try #require(cnm_queue_reserve(queue, &first))
    _ = try #require(cnm_queue_reserve(queue, &second))
    cnm_queue_publish(queue, second)
    // The first never publishes: the consumer, knowing every producer gone, skips it.
    #expect(cnm_queue_peek(queue) == nil)
    cnm_queue_skip(queue)
    #expect(cnm_queue_peek(queue) != nil)
    cnm_queue_release(queue)
    var third: UInt64 = 0
    _ = try #require(cnm_queue_reserve(queue, &third))
    #expect(third == 2)
    cnm_queue_publish(queue, third)
    #expect(cnm_queue_published_slot(queue, 2) != nil)
  }
}
