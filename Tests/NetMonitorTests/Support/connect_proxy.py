"""An HTTP proxy for the tests that answers CONNECT only, to 127.0.0.1 (or localhost) alone: it
answers 200, then relays bytes both ways until either side closes. Prints `PORT n`, serves until
stdin closes."""
import select
import socket
import sys
import threading


def relay(client, server):
    sockets = [client, server]
    try:
        while True:
            ready, _, _ = select.select(sockets, [], [], 10)
            if not ready:
                return
            for source in ready:
                data = source.recv(65536)
                if not data:
                    return
                (server if source is client else client).sendall(data)
    finally:
        client.close()
        server.close()


def serve(client):
    head = b""
    while b"\r\n\r\n" not in head:
        more = client.recv(4096)
        if not more:
            client.close()
            return
        head += more
    method, target = head.split(b" ")[:2]
    host, _, port = target.decode().rpartition(":")
    if method != b"CONNECT" or host not in ("127.0.0.1", "localhost"):
        client.sendall(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
        client.close()
        return
    server = socket.create_connection(("127.0.0.1", int(port)))
    client.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
    relay(client, server)


listener = socket.socket()
listener.bind(("127.0.0.1", 0))
listener.listen(16)
print("PORT", listener.getsockname()[1], flush=True)
while True:
    ready, _, _ = select.select([listener, sys.stdin], [], [])
    if sys.stdin in ready and not sys.stdin.readline():
        break
    if listener in ready:
        connection, _ = listener.accept()
        threading.Thread(target=serve, args=(connection,), daemon=True).start()
