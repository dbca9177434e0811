import Foundation
import Testing
import TestSupport

@testable import NetMonitor

/// Connections whose descriptor goes without close(2): closed by close_range or closefrom, or
/// replaced by dup2 or dup3. Each is recorded then, with its own bytes; the file that takes the
/// descriptor number next is never counted as the connection's traffic, nor parsed as HTTP.
@Suite("Descriptors closed without close")
struct DescriptorClosingTests {
  @Test("close_range, closefrom, dup2 and dup3 end the connection; CLOSE_RANGE_CLOEXEC does not")
  func closedWithoutClose() throws {
    let (elfhook, _) = try InjectionTests.products()
    let server = try LoopbackServer()
    let scratch = try TemporaryDirectory("injection")
    defer { scratch.remove() }
    let request = "GET /bytes/7 HTTP/1.1\\r\\nHost: 127.0.0.1:\(server.port)\\r\\n\\r\\n"
    let binary = try InjectionTests.compile(
      """
      #define _GNU_SOURCE
      #include <arpa/inet.h>
      #include <fcntl.h>
      #include <stdlib.h>
      #include <string.h>
      #include <sys/socket.h>
      #include <unistd.h>
      static const char request[] = "\(request)";
      static char file_bytes[100000];
      /* One keep-alive exchange on `fd`: the request, then the response head and its 7 bytes. */
      static void exchange(int fd) {
        if (write(fd, request, sizeof request - 1) != (ssize_t)(sizeof request - 1)) exit(2);
        char response[4096];
        size_t have = 0;
        for (;;) {
          ssize_t count = read(fd, response + have, sizeof response - 1 - have);
          if (count <= 0) exit(3);
          have += (size_t)count;
          response[have] = 0;
          char *end = strstr(response, "\\r\\n\\r\\n");
          if (end && have - (size_t)(end + 4 - response) >= 7) return;
        }
      }
      static int connected(void) {
        struct sockaddr_in address = {.sin_family = AF_INET, .sin_port = htons(\(server.port))};
        address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        if (connect(fd, (struct sockaddr *)&address, sizeof address) != 0) exit(4);
        exchange(fd);
        return fd;
      }
      /* A file written on descriptor `fd` (the number the socket had): HTTP-looking bytes. */
      static void file_on(int fd, const char *path) {
        int file = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
        if (file != fd && (dup2(file, fd) != fd || close(file) != 0)) exit(5);
        if (write(fd, file_bytes, sizeof file_bytes) != (ssize_t)sizeof file_bytes) exit(6);
        close(fd);
      }
      int main(int argc, char **argv) {
        (void)argc;
        memset(file_bytes, 'z', sizeof file_bytes);
        memcpy(file_bytes, "GET /fake HTTP/1.1\\r\\nHost: file\\r\\n\\r\\n", 36);
        int fd = connected();
        close_range((unsigned)fd, (unsigned)fd, 0);
        file_on(fd, argv[1]);
        fd = connected();
        closefrom(fd);
        file_on(fd, argv[1]);
        fd = connected();
        int file = open(argv[1], O_RDWR | O_TRUNC);
        dup2(file, fd);  /* the socket goes: fd is the file now */
        close(file);
        file_on(fd, argv[1]);
        fd = connected();
        file = open(argv[1], O_RDWR | O_TRUNC);
        dup3(file, fd, O_CLOEXEC);
        close(file);
        file_on(fd, argv[1]);
        /* Marked close-on-exec only: still the connection, for a second exchange. */
        fd = connected();
        close_range((unsigned)fd, (unsigned)fd, CLOSE_RANGE_CLOEXEC);
        exchange(fd);
        close(fd);
        return 0;
      }
      """, named: "closing", in: scratch)
    let output = scratch.file("records.jsonl")
    let run = try ProgramRun.run(
      [elfhook, "run", "--output", output.path, "--", binary.path, scratch.file("file.bin").path])
    #expect(run.status == 0, "\(run.stderr)")
    let records = try InjectionTests.records(in: output)
    let connections = InjectionTests.connectionRecords(records, port: server.port)
    let http = InjectionTests.httpRecords(records, port: server.port)
    let requestBytes = UInt64(request.replacingOccurrences(of: "\\r\\n", with: "\r\n").utf8.count)
    try #require(connections.count == 5, "\(connections)")
    #expect(connections.map { $0.httpExchanges ?? 0 } == [1, 1, 1, 1, 2])
    #expect(http.count == 6 && http.allSatisfy { $0.target == "/bytes/7" && $0.status == 200 }, "\(http)")
    for connection in connections {
      let exchanges = http.filter { $0.connectionId == connection.id }
      #expect(connection.bytesSent == requestBytes * UInt64(exchanges.count), "\(connection)")
      #expect(connection.bytesReceived == exchanges.map(\.responseBytes).reduce(0, +), "\(connection)")
      #expect(connection.error == nil)
    }
  }
}

extension DescriptorClosingTests {
  @Test("a vfork child closing its descriptors (Python's subprocess) leaves its parent's connection tracked")
  func vforkChildClosing() throws {
    let (elfhook, _) = try InjectionTests.products()
    let server = try LoopbackServer()
    let scratch = try TemporaryDirectory("injection")
    defer { scratch.remove() }
    let output = scratch.file("records.jsonl")
    // Debian's python3 starts a subprocess with vfork, whose child calls close_range on every
    // descriptor but the three it keeps, the parent's connection among them, before its exec.
    let program = """
      import http.client, subprocess
      connection = http.client.HTTPConnection("127.0.0.1", \(server.port))
      for size in (4, 5):
          connection.request("GET", f"/bytes/{size}")
          connection.getresponse().read()
          subprocess.run(["true"], check=True)
      connection.close()
      """
    let run = try ProgramRun.run([elfhook, "run", "--output", output.path, "--", "/usr/bin/python3", "-c", program])
    #expect(run.status == 0, "\(run.stderr)")
    let records = try InjectionTests.records(in: output)
    let connections = InjectionTests.connectionRecords(records, port: server.port)
    try #require(connections.count == 1, "\(connections)")
    let exchanges = InjectionTests.httpRecords(records, port: server.port)
    #expect(connections[0].httpExchanges == 2 && exchanges.count == 2)
    #expect(connections[0].bytesReceived == exchanges.map(\.responseBytes).reduce(0, +))
    #expect(connections[0].bytesSent == exchanges.map(\.requestBytes).reduce(0, +))
  }
}
