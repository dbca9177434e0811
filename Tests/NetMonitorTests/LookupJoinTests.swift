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

  @Test("a connection to another port, made between a lookup and its connect, gets the name and leaves the time")
  func timeStaysWithItsPort() throws {
    let (elfhook, _) = try InjectionTests.products()
    let looked = try LoopbackServer()
    let other = try LoopbackServer()
    let scratch = try TemporaryDirectory("injection")
    defer { scratch.remove() }
    // One thread: resolve localhost for the first server's port, connect to the other server's
    // port at the same address (a health check, another client's pooled connection), then to the
    // port the lookup was for.
    let binary = try InjectionTests.compile(
      """
      #include <netdb.h>
      #include <netinet/in.h>
      #include <stdlib.h>
      #include <sys/socket.h>
      #include <unistd.h>
      static void touch(struct sockaddr_in address) {
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        if (connect(fd, (struct sockaddr *)&address, sizeof address) != 0) exit(3);
        close(fd);
      }
      int main(void) {
        struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_STREAM}, *answer;
        if (getaddrinfo("localhost", "\(looked.port)", &hints, &answer) != 0) exit(2);
        struct sockaddr_in address = *(struct sockaddr_in *)answer->ai_addr;
        struct sockaddr_in elsewhere = address;
        elsewhere.sin_port = htons(\(other.port));
        touch(elsewhere);
        touch(address);
        return 0;
      }
      """, named: "ports", in: scratch)
    let output = scratch.file("records.jsonl")
    let run = try ProgramRun.run([elfhook, "run", "--output", output.path, "--", binary.path])
    #expect(run.status == 0, "\(run.stderr)")
    let records = try InjectionTests.records(in: output)
    let lookup = try #require(records.compactMap { record -> DNSRecord? in
      guard case .dns(let lookup) = record else { return nil }
      return lookup
    }.first, "\(records)")
    let toLooked = try #require(InjectionTests.connectionRecords(records, port: looked.port).first, "\(records)")
    let toOther = try #require(InjectionTests.connectionRecords(records, port: other.port).first, "\(records)")
    #expect(Joined(host: toOther.host, dnsMs: toOther.dnsMs) == Joined(host: "localhost", dnsMs: nil))
    #expect(Joined(host: toLooked.host, dnsMs: toLooked.dnsMs) == Joined(host: "localhost", dnsMs: lookup.durationMs))
  }

  @Test("eight threads connecting without a pause: every lookup still names its connection and gives it its time")
  func joinsUnderContention() throws {
    let (elfhook, _) = try InjectionTests.products()
    let scratch = try TemporaryDirectory("injection")
    defer { scratch.remove() }
    let lookups = 200
    // Eight threads connect to a refused port at 127.0.0.1 as fast as they can (each connect asks
    // the table for its address), while main resolves localhost and connects, 200 times.
    let binary = try InjectionTests.compile(
      """
      #include <netdb.h>
      #include <netinet/in.h>
      #include <pthread.h>
      #include <stdio.h>
      #include <stdlib.h>
      #include <sys/socket.h>
      #include <unistd.h>
      static struct sockaddr_in refused;
      static volatile int done;
      static struct sockaddr_in bound(int fd) {
        struct sockaddr_in address = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        socklen_t length = sizeof address;
        if (bind(fd, (struct sockaddr *)&address, sizeof address) != 0) exit(2);
        getsockname(fd, (struct sockaddr *)&address, &length);
        return address;
      }
      static void *hammer(void *unused) {
        (void)unused;
        for (int count = 0; !done && count < 4000; count++) {
          int fd = socket(AF_INET, SOCK_STREAM, 0);
          connect(fd, (struct sockaddr *)&refused, sizeof refused);
          close(fd);
        }
        return NULL;
      }
      int main(void) {
        int closed = socket(AF_INET, SOCK_STREAM, 0), listener = socket(AF_INET, SOCK_STREAM, 0);
        refused = bound(closed); /* bound, never listening: connects are refused */
        struct sockaddr_in listening = bound(listener);
        if (listen(listener, 4096) != 0) exit(2);
        char port[8];
        snprintf(port, sizeof port, "%d", ntohs(listening.sin_port));
        pthread_t threads[8];
        for (int i = 0; i < 8; i++) pthread_create(&threads[i], NULL, hammer, NULL);
        for (int i = 0; i < \(lookups); i++) {
          struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_STREAM}, *answer;
          if (getaddrinfo("localhost", port, &hints, &answer) != 0) exit(3);
          int fd = socket(AF_INET, SOCK_STREAM, 0);
          if (connect(fd, answer->ai_addr, answer->ai_addrlen) != 0) exit(4);
          freeaddrinfo(answer);
          close(fd);
          int accepted = accept(listener, NULL, NULL);
          if (accepted >= 0) close(accepted);
        }
        done = 1;
        for (int i = 0; i < 8; i++) pthread_join(threads[i], NULL);
        printf("%d\\n", ntohs(listening.sin_port));
        return 0;
      }
      """, named: "contention", in: scratch, flags: ["-pthread"])
    let output = scratch.file("records.jsonl")
    let run = try ProgramRun.run(
      [elfhook, "run", "--output", output.path, "--", binary.path], 
      environment: ProcessInfo.processInfo.environment.merging(["ELFHOOK_BUFFER_RECORDS": "65536"]) { $1 })
    #expect(run.status == 0, "\(run.stderr)")
    let port = try #require(UInt16(String(decoding: run.stdout, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)))
    let records = try InjectionTests.records(in: output)
    let connections = InjectionTests.connectionRecords(records, port: port)
    #expect(connections.count == lookups)
    let unjoined = connections.filter { $0.host != "localhost" || $0.dnsMs == nil }
    #expect(unjoined.count == 0, "\(unjoined.count) of \(connections.count) connections lost their lookup")
  }

  struct Joined: Equatable {
    var host: String?
    var dnsMs: Double?
  }
}
