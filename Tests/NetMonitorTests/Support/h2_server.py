"""An HTTP/2 server on 127.0.0.1 built on the `h2` package, for the HTTP/2 tests: it speaks
HTTP/2 with prior knowledge and after an HTTP/1.1 `Upgrade: h2c`, and misbehaves on purpose by
path: /reset answers with RST_STREAM, /goaway answers, then sends a GOAWAY that refuses every
later stream and closes the connection,
/big with a 20 KB header list (HEADERS + CONTINUATION), /padded with padded DATA; everything
else is 200 with a body of `?size=N` bytes (default 100, at most 16384: one DATA frame). A
malformed frame from the client gets h2's GOAWAY, and the connection closed. Prints `PORT n`,
serves until stdin closes."""
import select
import socket
import sys
import threading

import h2.config
import h2.connection
import h2.events
import h2.exceptions


def respond(connection, stream_id, path):
    size = 100
    if "size=" in path:
        size = int(path.split("size=")[1].split("&")[0])
    if path.startswith("/reset"):
        connection.reset_stream(stream_id, error_code=8)  # CANCEL
        return
    headers = [(":status", "200"), ("content-type", "text/plain")]
    if path.startswith("/big"):
        headers += [("x-filler-%d" % index, "v" * 200) for index in range(100)]
    body = b"x" * size
    connection.send_headers(stream_id, headers)
    pad = 20 if path.startswith("/padded") else None
    connection.send_data(stream_id, body, end_stream=True, pad_length=pad)


def serve(sock):
    config = h2.config.H2Configuration(client_side=False, header_encoding="utf-8")
    connection = h2.connection.H2Connection(config=config)
    first = b""
    while len(first) < 4:  # a client may send a byte at a time
        more = sock.recv(65535)
        if not more:
            return
        first += more
    if first.startswith(b"PRI "):
        connection.initiate_connection()
        pending = first
    else:  # HTTP/1.1 with Upgrade: h2c
        while b"\r\n\r\n" not in first:
            first += sock.recv(65535)
        head, pending = first.split(b"\r\n\r\n", 1)
        lines = head.decode().split("\r\n")
        path = lines[0].split(" ")[1]
        settings = [line.split(":", 1)[1].strip() for line in lines if line.lower().startswith("http2-settings:")][0]
        sock.sendall(b"HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: h2c\r\n\r\n")
        connection.initiate_upgrade_connection(settings)
        respond(connection, 1, path)
    sock.sendall(connection.data_to_send())
    goaway_sent = False
    while True:
        if pending:
            try:
                events = connection.receive_data(pending)
            except h2.exceptions.ProtocolError:  # a malformed frame: h2 queued its GOAWAY
                sock.sendall(connection.data_to_send())
                sock.close()
                return
            pending = b""
            for event in events:
                if isinstance(event, h2.events.RequestReceived):
                    path = dict(event.headers)[":path"]
                    if goaway_sent:
                        continue
                    respond(connection, event.stream_id, path)
                    if path.startswith("/goaway"):
                        connection.close_connection(last_stream_id=event.stream_id)
                        goaway_sent = True
                elif isinstance(event, h2.events.ConnectionTerminated):
                    sock.close()
                    return
            data = connection.data_to_send()
            if data:
                sock.sendall(data)
            if goaway_sent:
                sock.close()
                return
        try:
            pending = sock.recv(65535)
        except OSError:
            return
        if not pending:
            sock.close()
            return


listener = socket.socket()
listener.bind(("127.0.0.1", 0))
listener.listen(16)
print("PORT", listener.getsockname()[1], flush=True)
while True:
    ready, _, _ = select.select([listener, sys.stdin], [], [])
    if sys.stdin in ready and not sys.stdin.readline():
        break
    if listener in ready:
        sock, _ = listener.accept()
        threading.Thread(target=serve, args=(sock,), daemon=True).start()
