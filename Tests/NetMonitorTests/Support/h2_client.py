"""An HTTP/2 client built on the `h2` package, for the HTTP/2 tests: prior knowledge to
127.0.0.1:PORT, every request of the command line opened at once (one write), then reading until
each stream ends or the connection closes.

  h2_client.py PORT [--bytewise] [--no-table] [--malformed] PATH…

--bytewise sends and reads one byte per system call (the monitor must give the same records as
for whole writes); --no-table announces SETTINGS_HEADER_TABLE_SIZE 0, so that the server's
encoder empties its dynamic table with a size update; --malformed, once every stream ended,
sends a HEADERS frame on stream 0 (a protocol error) and then one more request, and reads until
the server closes. Prints `STREAM id STATUS` per response."""
import socket
import sys

import h2.config
import h2.connection
import h2.events
import h2.exceptions
import h2.settings

arguments = sys.argv[1:]
port = int(arguments.pop(0))
bytewise = "--bytewise" in arguments
no_table = "--no-table" in arguments
malformed = "--malformed" in arguments
paths = [argument for argument in arguments if not argument.startswith("--")]

sock = socket.create_connection(("127.0.0.1", port))
sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


def send(data):
    try:
        if bytewise:
            for index in range(len(data)):
                sock.sendall(data[index:index + 1])
        else:
            sock.sendall(data)
    except OSError:  # the server closed the connection (after its GOAWAY)
        pass


connection = h2.connection.H2Connection(config=h2.config.H2Configuration(client_side=True))
connection.initiate_connection()
if no_table:
    connection.update_settings({h2.settings.SettingCodes.HEADER_TABLE_SIZE: 0})
open_streams = set()


def request(path):
    stream_id = connection.get_next_available_stream_id()
    connection.send_headers(stream_id, [
        (":method", "GET"), (":path", path), (":scheme", "http"), (":authority", "127.0.0.1:%d" % port),
        ("user-agent", "h2-client-test"), ("x-request", path),
    ], end_stream=True)
    open_streams.add(stream_id)


def read_until_ended():
    while open_streams:
        try:
            data = sock.recv(1 if bytewise else 65535)
        except OSError:
            return
        if not data:
            return
        try:
            events = connection.receive_data(data)
        except h2.exceptions.ProtocolError:  # the server's answer to --malformed
            return
        for event in events:
            if isinstance(event, h2.events.ResponseReceived):
                print("STREAM", event.stream_id, dict(event.headers).get(b":status", b"").decode(), flush=True)
            elif isinstance(event, h2.events.DataReceived):
                connection.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
            elif isinstance(event, (h2.events.StreamEnded, h2.events.StreamReset)):
                open_streams.discard(event.stream_id)
            elif isinstance(event, h2.events.ConnectionTerminated):
                open_streams.clear()
        send(connection.data_to_send())


for path in paths:
    request(path)
send(connection.data_to_send())
read_until_ended()
if malformed:
    send(bytes([0, 0, 0, 1, 4, 0, 0, 0, 0]))  # HEADERS (END_HEADERS, empty) on stream 0
    request("/after-malformed")
    send(connection.data_to_send())
    read_until_ended()
sock.close()
