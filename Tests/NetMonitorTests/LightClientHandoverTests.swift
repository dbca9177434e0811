import Foundation
import Testing
import TestSupport

/// The injected library handing a call to the monitor it loads (CShims/CElfHookPreload/clients.c,
/// monitor_loading.c): a light client's request sent on a thread its replay was not armed for
/// loads the monitor inside that call while another thread reads the answer. The records must
/// still pair the request with its answer, timed as the two calls moved, however long the load.
@Suite("Light clients handing a call to the monitor", .serialized)
struct LightClientHandoverTests {
  @Test(
    "a request sent on another thread loads the monitor: the answer is read as an answer, and the exchange timed as its calls moved",
    arguments: ["reader-thread", "connecting-thread"])
  func timedAsTheCallsMoved(reader: String) throws {
    let server = try LoopbackServer()
    let scratch = try TemporaryDirectory("light")
    defer { scratch.remove() }
    // Java's HttpClient's way: the main thread connects, another sends the request (the replay,
    // armed for the connecting thread, refuses it: the monitor loads inside that send), and the
    // answer, which comes while the monitor loads, is read by a third thread or by the connecting
    // one, for which the library's replay is still armed until the monitor takes the connection
    // over (an answer to a request it did not take is not the body of one under way). Each thread
    // says when its call began and returned (CLOCK_REALTIME, as records' start_unix_ns).
    let source = """
      #include <arpa/inet.h>
      #include <pthread.h>
      #include <stdio.h>
      #include <stdlib.h>
      #include <string.h>
      #include <sys/socket.h>
      #include <time.h>
      #include <unistd.h>
      static int fd;
      static unsigned long long now(void) {
        struct timespec t;
        clock_gettime(CLOCK_REALTIME, &t);
        return t.tv_sec * 1000000000ull + t.tv_nsec;
      }
      static void *send_request(void *unused) {
        char request[200];
        int length = snprintf(request, sizeof request, "GET /bytes/10 HTTP/1.1\\r\\nHost: 127.0.0.1\\r\\n\\r\\n");
        unsigned long long before = now();
        if (write(fd, request, length) != length) exit(4);
        printf("sent %llu %llu\\n", before, now());
        return unused;
      }
      static void *read_answer(void *unused) {
        char answer[4096];
        ssize_t got = 0, n;
        char *end = NULL;
        while (!(end && answer + got - (end + 4) >= 10) && (n = read(fd, answer + got, sizeof answer - 1 - got)) > 0) {
          got += n;
          answer[got] = 0;
          end = strstr(answer, "\\r\\n\\r\\n");
        }
        printf("read %llu\\n", now());
        return unused;
      }
      int main(int argc, char **argv) {
        fd = socket(AF_INET, SOCK_STREAM, 0);
        struct sockaddr_in address = {.sin_family = AF_INET, .sin_port = htons(\(server.port))};
        inet_pton(AF_INET, "127.0.0.1", &address.sin_addr);
        if (connect(fd, (struct sockaddr *)&address, sizeof address) != 0) exit(3);
        pthread_t reader, sender;
        int connecting_thread_reads = argc > 1 && strcmp(argv[1], "connecting-thread") == 0;
        if (!connecting_thread_reads) pthread_create(&reader, NULL, read_answer, NULL);
        pthread_create(&sender, NULL, send_request, NULL);
        if (connecting_thread_reads) read_answer(NULL);
        pthread_join(sender, NULL);
        if (!connecting_thread_reads) pthread_join(reader, NULL);
        close(fd);
        return 0;
      }
      """
    let program = try InjectionTests.compile(source, named: "split_threads", in: scratch, flags: ["-pthread"])
    let (elfhook, _) = try InjectionTests.products()
    let output = scratch.file("records.jsonl")
    let run = try ProgramRun.run(
      ["/usr/bin/env", "ELFHOOK_LOG=info", elfhook, "run", "--output", output.path, "--", program.path, reader])
    #expect(run.status == 0)
    #expect(run.stderr.contains("elfhook: recording"), "the request on another thread loads the monitor")
    var times: [String: [Double]] = [:]
    for line in run.stdoutText.split(separator: "\n") {
      let words = line.split(separator: " ")
      times[String(words[0])] = words.dropFirst().compactMap { Double($0) }
    }
    let sent = try #require(times["sent"], "the program said: \(run.stdoutText)"), read = try #require(times["read"]?.first)
    try #require(sent.count == 2)
    let records = try String(contentsOf: output, encoding: .utf8).split(separator: "\n").compactMap {
      try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
    }
    let exchange = try #require(records.first { $0["kind"] as? String == "http" })
    #expect(exchange["status"] as? Int == 200 && exchange["response_complete"] as? Bool == true, "\(exchange)")
    #expect(exchange["response_bytes"] as? Int ?? 0 > 10)
    let start = try #require((exchange["start_unix_ns"] as? NSNumber)?.doubleValue)
    let end = start + (try #require((exchange["duration_ms"] as? NSNumber)?.doubleValue)) * 1e6
    // The send took the monitor's load (a millisecond or more); the exchange began when its bytes
    // left, before the load, not when the monitor had loaded and read them, at the call's end.
    let sendCall = sent[1] - sent[0]
    try #require(sendCall > 500_000, "the monitor loaded inside the send: \(sendCall) ns")
    #expect(start > sent[0] - 200_000 && sent[1] - start > 300_000, "began \(start - sent[0]) ns into a send of \(sendCall)")
    #expect(end >= start && end < read + 200_000, "ended \(end - start) ns after it began, read \(read - start) ns after")
  }
}
