import CNetMonitor
import Foundation
import Glibc
import Testing
import TestSupport

@testable import NetMonitor

/// A process's record ring from the producer's side: it takes memory as it fills, and when the
/// ring (or the file system under it) is full, records are dropped and counted, never a SIGBUS
/// and never a blocked host. Real python3 processes, injected with libElfHookPreload.so.
@Suite("Record rings: reserved as they fill, full without harm", .serialized)
struct RingReservationTests {
  /// A python3 program making `count` connects to a port nobody listens on: `count` connection
  /// records (ECONNREFUSED), and the port. With `lookupFirst`, a name lookup before them: the
  /// injected C library creates the ring for its dns record, and hands it to the monitor.
  static func refusedConnects(_ count: Int, lookupFirst: Bool = false) throws -> (program: String, port: UInt16) {
    let port = try Sockets.unusedPort()
    let program = """
      import socket
      \(lookupFirst ? "socket.getaddrinfo('localhost', 80)" : "")
      for i in range(\(count)):
          s = socket.socket()
          try: s.connect(("127.0.0.1", \(port)))
          except ConnectionRefusedError: pass
          s.close()
      print("done")
      """
    return (program, port)
  }

  /// Runs `program` under python3 injected with the library, recording into `directory` with
  /// rings of `capacity` records; the one ring it made.
  static func runInjected(_ program: String, capacity: Int, in directory: String) throws -> RecordRing {
    let (_, library) = try InjectionTests.products()
    let run = try ProgramRun.run(
      ["/usr/bin/env", "-i", "LD_PRELOAD=\(library)", "ELFHOOK_OUTPUT=\(directory)/%p.ring",
       "ELFHOOK_BUFFER_RECORDS=\(capacity)", "/usr/bin/python3", "-c", program])
    #expect(run.status == 0 && run.stdout == Data("done\n".utf8), "\(run.stderr)")
    #expect(run.stderr.isEmpty)
    let names = try FileManager.default.contentsOfDirectory(atPath: directory)
    try #require(names.count == 1, "\(names)")
    return try RecordRing(path: directory + "/" + names[0])
  }

  /// The refused connections to `port` and the name lookups the ring holds.
  static func records(in ring: RecordRing, port: UInt16) -> (refused: Int, lookups: Int) {
    var counts = (refused: 0, lookups: 0)
    ring.drain { record in
      switch record {
      case .connection(let connection) where connection.peerPort == port && connection.error?.code == "ECONNREFUSED":
        counts.refused += 1
      case .dns: counts.lookups += 1
      default: break
      }
    }
    return counts
  }

  @Test("a full ring drops records and counts them; the host is never blocked")
  func overflowIsCounted() throws {
    let scratch = try TemporaryDirectory("injection")
    defer { scratch.remove() }
    // 150 refused connects into a ring of 64 nobody drains.
    let (program, port) = try Self.refusedConnects(150)
    let ring = try Self.runInjected(program, capacity: 64, in: scratch.url.path)
    #expect(Self.records(in: ring, port: port) == (refused: 64, lookups: 0))
    #expect(ring.droppedRecords == 150 - 64)
    #expect(ring.reservationError == nil)
    // `elfhook report` on the ring says so too.
    let (elfhook, _) = try InjectionTests.products()
    let report = try ProgramRun.run([elfhook, "report", ring.path])
    let text = String(decoding: report.stdout, as: UTF8.self)
    #expect(report.status == 0)
    #expect(text.contains("86 records were dropped (\(ring.path) was full: its process recorded faster than it was read)"), "\(text)")
    // A copy of its first 8 KiB is a ring cut short, and said so once.
    let copy = scratch.file("copy.ring")
    try Data(contentsOf: URL(fileURLWithPath: ring.path)).prefix(8192).write(to: copy)
    let size = try #require(FileManager.default.attributesOfItem(atPath: ring.path)[.size] as? Int)
    let cut = try ProgramRun.run([elfhook, "report", copy.path])
    #expect(cut.status == 1)
    #expect(cut.stderr == "elfhook: cannot read \(copy.path): a record ring cut short: 8192 bytes of the \(size) its header names\n", "\(cut.stderr)")
  }

  /// The bytes of a ring file (`size` bytes, `capacity` slots of `slotSize`) that hold memory once
  /// its first `usable` slots do: whole pages from the start of the file through the queue's
  /// header and those slots' sequence numbers, and the pages of those slots, at the file's end.
  static func reservedBytes(size: Int, capacity: Int, slotSize: Int, usable: Int) -> Int {
    let page = Int(sysconf(Int32(_SC_PAGESIZE)))
    let headersAndSequences = Int(CNM_RING_QUEUE_OFFSET) + cnm_queue_header_size() + usable * 8
    let slots = size - capacity * slotSize
    let firstSlotPage = slots / page
    let slotsEndPage = (slots + usable * slotSize + page - 1) / page
    return ((headersAndSequences + page - 1) / page + slotsEndPage - firstSlotPage) * page
  }

  @Test("a ring takes memory in stages as it fills: 151 records of 4,096 hold the pages of 384")
  func reservedAsItFills() throws {
    // On tmpfs, where a file's blocks are exactly the pages it was given.
    let directory = "/dev/shm/elfhook-test-" + UUID().uuidString
    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: false)
    defer { try? FileManager.default.removeItem(atPath: directory) }
    // A lookup first: the ring the C library made grows as the monitor writes into it.
    let (program, port) = try Self.refusedConnects(150, lookupFirst: true)
    let ring = try Self.runInjected(program, capacity: 4096, in: directory)
    #expect(Self.records(in: ring, port: port) == (refused: 150, lookups: 1))
    #expect(ring.droppedRecords == 0 && ring.reservationError == nil)
    var status = stat()
    try #require(stat(ring.path, &status) == 0)
    // Stages of 8, 32, 128 and 384 records: the fourth began at the 64th record.
    let reserved = Self.reservedBytes(size: Int(status.st_size), capacity: 4096, slotSize: RawRecord.slotSize, usable: 384)
    #expect(Int(status.st_blocks) * 512 == reserved)
  }

  @Test("a new ring holds the memory of its first records and the headers only: five pages")
  func firstRecordsOnly() throws {
    let directory = "/dev/shm/elfhook-test-" + UUID().uuidString
    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: false)
    defer { try? FileManager.default.removeItem(atPath: directory) }
    var path = [CChar](repeating: 0, count: Int(PATH_MAX))
    let queue = try #require(
      cnm_ring_create(
        directory + "/%p.ring", 4096, RawRecord.slotSize, RawRecord.layout, Int(CNM_RING_FIRST_RECORDS), &path,
        path.count))
    defer { cnm_ring_unmap(queue) }
    var status = stat()
    try #require(stat(path, &status) == 0)
    let reserved = Self.reservedBytes(
      size: Int(status.st_size), capacity: 4096, slotSize: RawRecord.slotSize, usable: Int(CNM_RING_FIRST_RECORDS))
    #expect(Int(status.st_blocks) * 512 == reserved)
    #expect(reserved == 5 * Int(sysconf(Int32(_SC_PAGESIZE))))
    // The sequence numbers were never written: zero is every slot free. A record goes in and out.
    var ticket: UInt64 = 0
    let slot = try #require(cnm_queue_reserve(queue, &ticket))
    slot.storeBytes(of: UInt64(0xfeed), as: UInt64.self)
    #expect(cnm_queue_published_slot(queue, ticket) == nil)
    cnm_queue_publish(queue, ticket)
    #expect(cnm_queue_peek(queue)?.load(as: UInt64.self) == 0xfeed)
    cnm_queue_release(queue)
    #expect(cnm_queue_peek(queue) == nil)
  }

  @Test(
    "a full /dev/shm: the records beyond what the ring could reserve are dropped, counted and explained",
    .enabled(if: RingReservationTests.canMountTmpfs, "needs a mount namespace (unshare -m) and tmpfs mounts"))
  func fullFileSystem() throws {
    let (elfhook, _) = try InjectionTests.products()
    // A /dev/shm of 256 KiB, in a mount namespace of the run's own: the ring's stages of 8, 32 and
    // 128 records fit (~170 KB in all), its fourth (384: ~310 KB more) does not.
    let (program, _) = try Self.refusedConnects(150)
    let script = "mount -t tmpfs -o size=256k tmpfs /dev/shm && exec \"$0\" run -- python3 -c \"$1\""
    let run = try ProgramRun.run(["unshare", "-m", "sh", "-c", script, elfhook, program])
    #expect(run.status == 0 && run.stdout == Data("done\n".utf8), "\(run.stderr)")
    let dropped = #/22 records were dropped \(process (\d+) \(python3\) could not reserve more of (/dev/shm/elfhook\.\w+/\d+\.ring): No space left on device\): the counts below are low\./#
    let match = try #require(run.stderr.firstMatch(of: dropped), "\(run.stderr)")
    #expect(match.output.2.hasSuffix("/\(match.output.1).ring"))
    #expect(run.stderr.contains("128 connections opened"), "\(run.stderr)")
  }

  @Test("four threads filling a growing ring back to back: every record published, none dropped")
  func concurrentGrowth() throws {
    let directory = "/dev/shm/elfhook-test-" + UUID().uuidString
    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: false)
    defer { try? FileManager.default.removeItem(atPath: directory) }
    var path = [CChar](repeating: 0, count: Int(PATH_MAX))
    let capacity = 8192, threads = 4, perThread = 1500
    let queue = try #require(
      cnm_ring_create(directory + "/%p.ring", capacity, 64, 64, Int(CNM_RING_FIRST_RECORDS), &path, path.count))
    defer { cnm_ring_unmap(queue) }
    let address = UInt(bitPattern: UnsafeRawPointer(queue))
    DispatchQueue.concurrentPerform(iterations: threads) { _ in
      let queue = OpaquePointer(bitPattern: address)!
      for _ in 0..<perThread {
        var ticket: UInt64 = 0
        guard let slot = cnm_queue_reserve(queue, &ticket) else {
          cnm_queue_count_drop(queue)
          continue
        }
        slot.storeBytes(of: ticket, as: UInt64.self)
        cnm_queue_publish(queue, ticket)
      }
    }
    // Threads that outrun a stage being populated (its grower preempted, under load) populate
    // their own slots: nothing is dropped while /dev/shm has room.
    let written = cnm_queue_write_position(queue)
    var published: UInt64 = 0
    for position in 0..<written {
      guard let slot = cnm_queue_published_slot(queue, position) else { continue }
      #expect(slot.load(as: UInt64.self) == position)
      published += 1
    }
    #expect(published == UInt64(threads * perThread))
    #expect(cnm_queue_dropped(queue) == 0)
    #expect(cnm_queue_growth_error(queue) == 0)
    // The memory taken covers the 6,000 slots and ends no later than the stage that the last
    // growth ticket (5,888 of 6,016 usable) takes: 6,272 slots of 8,192.
    var status = stat()
    try #require(stat(path, &status) == 0)
    let reserved = { (usable: Int) in
      Self.reservedBytes(size: Int(status.st_size), capacity: capacity, slotSize: 64, usable: usable)
    }
    #expect((reserved(6000)...reserved(6272)).contains(Int(status.st_blocks) * 512))
  }

  static let canMountTmpfs: Bool = {
    guard let run = try? ProgramRun.run(["unshare", "-m", "sh", "-c", "mount -t tmpfs -o size=64k tmpfs /mnt"])
    else { return false }
    return run.status == 0
  }()
}
