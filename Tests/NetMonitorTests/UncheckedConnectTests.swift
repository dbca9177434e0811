import Foundation
import Testing
import TestSupport

@testable import NetMonitor

/// Non-blocking connects a program closes without asking how they ended (a happy-eyeballs client
/// closing the attempts that lost): the record says what the socket says, never an invented error.
@Suite("Connects closed before they were checked")
struct UncheckedConnectTests {
  @Test("unchecked: connected, no error; refused, ECONNREFUSED; in progress, ECANCELED; no connect time. Checked: timed")
  func outcomes() throws {
    let (elfhook, _) = try InjectionTests.products()
    let server = try LoopbackServer()
    let scratch = try TemporaryDirectory("injection")
    defer { scratch.remove() }
    // A port nobody listens on: bound, then closed.
    let closedPort = try Sockets.unusedPort()
    let binary = try InjectionTests.compile(
      """
      #include <arpa/inet.h>
      #include <poll.h>
      #include <stdio.h>
      #include <sys/socket.h>
      #include <unistd.h>
      static struct sockaddr_in loopback(int port) {
        struct sockaddr_in address = {.sin_family = AF_INET, .sin_port = htons(port)};
        address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        return address;
      }
      /* A non-blocking connect to `port`, waited for (poll, which the monitor does not see) at
         most `wait_ms`; with `check`, then checked (SO_ERROR), as a program that uses it does. */
      static int attempt(int port, int wait_ms, int check) {
        struct sockaddr_in address = loopback(port);
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
        connect(fd, (struct sockaddr *)&address, sizeof address);
        struct pollfd ready = {fd, POLLOUT, 0};
        poll(&ready, 1, wait_ms);
        if (check) {
          int error;
          socklen_t length = sizeof error;
          getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length);
        }
        return fd;
      }
      int main(void) {
        close(attempt(\(server.port), 10000, 0));
        close(attempt(\(closedPort), 10000, 0));
        /* A listener whose accept queue is full drops the next SYN: that connect stays in progress. */
        int listener = socket(AF_INET, SOCK_STREAM, 0);
        struct sockaddr_in address = loopback(0);
        socklen_t length = sizeof address;
        bind(listener, (struct sockaddr *)&address, sizeof address);
        listen(listener, 0);
        getsockname(listener, (struct sockaddr *)&address, &length);
        int port = ntohs(address.sin_port);
        int queued = attempt(port, 10000, 1);
        close(attempt(port, 20, 0)); /* its SYN was dropped: poll times out */
        close(queued);
        close(attempt(\(server.port), 10000, 1));
        printf("%d\\n", port);
        return 0;
      }
      """, named: "unchecked", in: scratch)
    let output = scratch.file("records.jsonl")
    let run = try ProgramRun.run([elfhook, "run", "--output", output.path, "--", binary.path])
    #expect(run.status == 0, "\(run.stderr)")
    let fullPort = try #require(UInt16(String(decoding: run.stdout, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)))
    let connections = try InjectionTests.records(in: output).compactMap { record -> ConnectionRecord? in
      guard case .connection(let connection) = record else { return nil }
      return connection
    }
    try #require(connections.count == 5, "\(connections)")
    let outcome = { (record: ConnectionRecord) in (record.peerPort, record.error?.code, record.connectMs != nil) }
    #expect(outcome(connections[0]) == (server.port, nil, false))  // connected, never checked
    #expect(outcome(connections[1]) == (closedPort, "ECONNREFUSED", false))  // refused, never checked
    #expect(outcome(connections[2]) == (fullPort, "ECANCELED", false))  // given up while in progress
    #expect(outcome(connections[3]) == (fullPort, nil, true))  // in the full queue, polled
    #expect(outcome(connections[4]) == (server.port, nil, true))
  }
}
