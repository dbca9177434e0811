#!/usr/bin/env python3
"""A loopback HTTP/1.1 upstream that counts, per connection, the bytes it read from and wrote to
its socket (127.0.0.1 only): the other side's account that NetMonitor's records are compared with.

GET /data/N answers 200 with N bytes (Content-Length, keep-alive); anything else 404. With
--tls CERT KEY it speaks HTTPS, through memory BIOs so that the bytes counted are the ciphertext
on the socket. When a connection ends, one JSON line is appended to --report:
  {"peer_port": P, "received": R, "sent": S, "requests": [bytes…], "responses": [bytes…]}
(requests/responses: the size of each request head and each whole response, plaintext).
Prints "PORT <n>" on stdout once listening; exits when stdin closes or after --lifetime seconds.
"""
import argparse
import json
import os
import socket
import ssl
import sys
import threading

report_lock = threading.Lock()


class Counted:
    """A socket connection, plain or TLS, with the bytes that crossed the socket counted."""

    def __init__(self, sock, context):
        self.sock = sock
        self.received = 0
        self.sent = 0
        self.tls = None
        if context is not None:
            self.incoming, self.outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
            self.tls = context.wrap_bio(self.incoming, self.outgoing, server_side=True)
            self._until_done(self.tls.do_handshake)

    def _send_raw(self, data):
        self.sock.sendall(data)
        self.sent += len(data)

    def _receive_raw(self):
        data = self.sock.recv(65536)
        self.received += len(data)
        return data

    def _flush_tls(self):
        data = self.outgoing.read()
        if data:
            self._send_raw(data)

    def _until_done(self, operation):
        while True:
            try:
                result = operation()
                self._flush_tls()
                return result
            except ssl.SSLWantReadError:
                self._flush_tls()
                data = self._receive_raw()
                if not data:
                    raise EOFError
                self.incoming.write(data)

    def receive(self):
        """Plaintext bytes, b"" at the end of the stream."""
        if self.tls is None:
            return self._receive_raw()
        try:
            return self._until_done(lambda: self.tls.read(65536))
        except (EOFError, ssl.SSLZeroReturnError, ssl.SSLEOFError):
            return b""

    def send(self, data):
        if self.tls is None:
            self._send_raw(data)
        else:
            self.tls.write(data)
            self._flush_tls()


def serve(sock, peer, context, report):
    requests, responses = [], []
    connection = None
    try:
        connection = Counted(sock, context)
        buffer = b""
        while True:
            data = connection.receive()
            if not data:
                break
            buffer += data
            while b"\r\n\r\n" in buffer:
                head, buffer = buffer.split(b"\r\n\r\n", 1)
                requests.append(len(head) + 4)
                parts = head.split(b"\r\n")[0].split(b" ")
                path = parts[1].decode() if len(parts) > 1 else "/"
                pieces = path.split("?")[0].strip("/").split("/")
                if len(pieces) == 2 and pieces[0] == "data" and pieces[1].isdigit():
                    body, status = b"d" * int(pieces[1]), b"200 OK"
                else:
                    body, status = b"not found\n", b"404 Not Found"
                response = (b"HTTP/1.1 " + status + b"\r\nContent-Type: application/octet-stream\r\n"
                            + b"Content-Length: %d\r\n\r\n" % len(body) + body)
                connection.send(response)
                responses.append(len(response))
    except (OSError, EOFError, ssl.SSLError):
        pass
    finally:
        sock.close()
        if connection is not None:
            line = json.dumps({"peer_port": peer[1], "received": connection.received, "sent": connection.sent,
                               "requests": requests, "responses": responses})
            with report_lock, open(report, "a") as file:
                file.write(line + "\n")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--report", required=True)
    parser.add_argument("--tls", nargs=2, metavar=("CERT", "KEY"))
    parser.add_argument("--lifetime", type=float, default=600)
    arguments = parser.parse_args()
    context = None
    if arguments.tls:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(*arguments.tls)
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    print("PORT", listener.getsockname()[1], flush=True)

    def accept_forever():
        while True:
            sock, peer = listener.accept()
            threading.Thread(target=serve, args=(sock, peer, context, arguments.report), daemon=True).start()

    threading.Thread(target=accept_forever, daemon=True).start()
    stopper = threading.Timer(arguments.lifetime, lambda: os._exit(0))
    stopper.daemon = True
    stopper.start()
    try:
        sys.stdin.read()
    except KeyboardInterrupt:
        pass
    os._exit(0)


if __name__ == "__main__":
    main()
