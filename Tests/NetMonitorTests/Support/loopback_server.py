#!/usr/bin/env python3
"""A loopback HTTP/1.1 server for the NetMonitor tests (127.0.0.1 only).

Serves /bytes/N (N bytes, Content-Length), /chunked/N (N bytes in chunks of 1000; with ?pause,
0.3 s after the first), /close/N (N bytes,
close-delimited, HTTP/1.0 style), /status/CODE, /hangup (closes without answering), /truncated/N
(announces N bytes, sends half, closes), and echoes
POST and PUT bodies (of a Content-Length, or chunked), but for POST /reject: 413 after the body's first 64 KiB, the rest left unread
(drained until the client closes, for 10 s at most). Keep-alive by default.
With --tls CERT KEY it speaks HTTPS. Prints "PORT <n>" on stdout once listening, then serves until
stdin closes or it is killed. Bounded: it exits by itself after --lifetime seconds (default 120).
"""
import argparse
import os
import http.server
import socketserver
import ssl
import sys
import threading
import time


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def _send_body(self, status, body, chunked=False, close=False, pause=False):
        self.send_response(status)
        self.send_header("Content-Type", "application/octet-stream")
        if chunked:
            self.send_header("Transfer-Encoding", "chunked")
        elif not close:
            self.send_header("Content-Length", str(len(body)))
        if close:
            self.send_header("Connection", "close")
            self.close_connection = True
        self.end_headers()
        if self.command == "HEAD":
            return
        if chunked:
            for start in range(0, len(body), 1000):
                piece = body[start:start + 1000]
                self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
                if pause and start == 0:
                    time.sleep(0.3)
            self.wfile.write(b"0\r\n\r\n")
        else:
            self.wfile.write(body)

    def do_GET(self):
        parts = self.path.split("?")[0].strip("/").split("/")
        kind, amount = (parts + ["", "0"])[:2]
        try:
            number = int(amount)
        except ValueError:
            number = 0
        if kind == "bytes":
            self._send_body(200, b"x" * number)
        elif kind == "chunked":
            self._send_body(200, b"c" * number, chunked=True, pause="pause" in self.path)
        elif kind == "close":
            self._send_body(200, b"z" * number, close=True)
        elif kind == "status":
            self._send_body(number, b"")
        elif kind == "hangup":
            self.close_connection = True
        elif kind == "truncated":
            self.send_response(200)
            self.send_header("Content-Length", str(number))
            self.end_headers()
            self.wfile.write(b"t" * (number // 2))
            self.close_connection = True
        else:
            self._send_body(404, b"not found\n")

    do_HEAD = do_GET

    def do_POST(self):
        if self.path == "/reject":
            # The first 64 KiB of the body are read before the answer: some of it was surely sent.
            self.rfile.read(min(int(self.headers.get("Content-Length", "0")), 65536))
            self.send_response(413)
            self.send_header("Content-Length", "0")
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.flush()
            self.close_connection = True
            # Read what comes until the client gives up and closes: closing first would reset the
            # connection, and a client slow to read (a loaded machine) would lose the 413 to it.
            self.connection.settimeout(10)
            deadline = time.monotonic() + 10
            try:
                while time.monotonic() < deadline and self.connection.recv(65536):
                    pass
            except OSError:
                pass
            return
        self._send_body(200, self._read_body())

    do_PUT = do_POST

    def _read_body(self):
        if self.headers.get("Transfer-Encoding", "").lower() != "chunked":
            return self.rfile.read(int(self.headers.get("Content-Length", "0")))
        body = b""
        while True:
            size = int(self.rfile.readline().split(b";")[0], 16)
            if size == 0:
                while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                    pass  # trailers
                return body
            body += self.rfile.read(size)
            self.rfile.readline()


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--tls", nargs=2, metavar=("CERT", "KEY"))
    parser.add_argument("--lifetime", type=float, default=120)
    arguments = parser.parse_args()
    server = Server(("127.0.0.1", 0), Handler)
    if arguments.tls:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(*arguments.tls)
        server.socket = context.wrap_socket(server.socket, server_side=True)
    print("PORT", server.server_address[1], flush=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    stopper = threading.Timer(arguments.lifetime, lambda: os._exit(0))
    stopper.start()
    try:
        sys.stdin.read()  # returns when the test closes our stdin or exits
    except KeyboardInterrupt:
        pass
    finally:
        stopper.cancel()
        server.shutdown()


if __name__ == "__main__":
    main()
