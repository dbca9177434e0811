import Foundation
import Testing
import TestSupport

@testable import NetMonitor

/// Which lookup a connection is joined to: its own thread's, among lookups of other names that
/// returned the same address; and a lookup's time goes to the first connection it served only.
@Suite("Lookups joined to connections by thread, their time once")
struct LookupJoinTests {
  @Test("two threads resolve two names to 127.0.0.1: each connection gets its thread's name and time; a later one, the name only")
  func joinedByThread() throws {
    let (elfhook, _) = try InjectionTests.products()
    let server = try LoopbackServer()
    let scratch = try TemporaryDirectory("injection")
    defer { scratch.remove() }
    // main: lookup of localhost; thread: lookup of 127.0.0.1; main connects (/bytes/1), then the
    // thread (/bytes/2), then main again with the address it has (/bytes/3): every step waits
    // for the one before, so the lookups interleave as threads of a client's pool may.
    let binary = try InjectionTests.compile(
      """
      #include <netdb.h>
      #include <pthread.h>
      #include <semaphore.h>
      #include <stdio.h>
      #include <stdlib.h>
      #include <string.h>
      #include <sys/socket.h>
      #include <unistd.h>
      static sem_t looked_up, main_connected;
      static struct addrinfo *resolve(const char *name) {
        struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_STREAM}, *answer;
        if (getaddrinfo(name, "\(server.port)", &hints, &answer) != 0) exit(2);
        return answer;
      }
      static void fetch(struct addrinfo *answer, int size) {
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        if (connect(fd, answer->ai_addr, answer->ai_addrlen) != 0) exit(3);
        char request[128], response[1024];
        int length = snprintf(request, sizeof request, "GET /bytes/%d HTTP/1.1\\r\\nHost: x\\r\\nConnection: close\\r\\n\\r\\n", size);
        if (write(fd, request, (size_t)length) != length) exit(4);
        while (read(fd, response, sizeof response) > 0) {}
        close(fd);
      }
      static void *other(void *unused) {
        (void)unused;
        struct addrinfo *answer = resolve("127.0.0.1");
        sem_post(&looked_up);
        sem_wait(&main_connected);
        fetch(answer, 2);
        return NULL;
      }
      int main(void) {
        sem_init(&looked_up, 0, 0);
        sem_init(&main_connected, 0, 0);
        struct addrinfo *answer = resolve("localhost");
        pthread_t thread;
        pthread_create(&thread, NULL, other, NULL);
        sem_wait(&looked_up);
        fetch(answer, 1);
        sem_post(&main_connected);
        pthread_join(thread, NULL);
        fetch(answer, 3);
        return 0;
      }
      """, named: "lookups", in: scratch, flags: ["-pthread"])
    let output = scratch.file("records.jsonl")
    let run = try ProgramRun.run([elfhook, "run", "--output", output.path, "--", binary.path])
    #expect(run.status == 0, "\(run.stderr)")
    let records = try InjectionTests.records(in: output)
    let lookups = Dictionary(uniqueKeysWithValues: records.compactMap { record -> (String, Double)? in
      guard case .dns(let lookup) = record else { return nil }
      return (lookup.host, lookup.durationMs)
    })
    let targets = Dictionary(uniqueKeysWithValues: records.compactMap { record -> (UInt64, String)? in
      guard case .http(let http) = record else { return nil }
      return (http.connectionId, http.target)
    })
    let connections = InjectionTests.connectionRecords(records, port: server.port)
    let joined = Dictionary(uniqueKeysWithValues: connections.map { connection in
      (targets[connection.id] ?? "?", Joined(host: connection.host, dnsMs: connection.dnsMs))
    })
    try #require(lookups.count == 2 && joined.count == 3, "\(records)")
    #expect(joined["/bytes/1"] == Joined(host: "localhost", dnsMs: lookups["localhost"]))
    #expect(joined["/bytes/2"] == Joined(host: "127.0.0.1", dnsMs: lookups["127.0.0.1"]))
    #expect(joined["/bytes/3"] == Joined(host: "localhost", dnsMs: nil))
  }

  struct Joined: Equatable {
    var host: String?
    var dnsMs: Double?
  }
}
