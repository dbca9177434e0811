"""A gRPC server and client in one process (grpcio, cleartext HTTP/2 on 127.0.0.1), for the
HTTP/2 tests: three unary calls (two OK, one failing with NOT_FOUND and a message), a
server-streaming call of three messages, and a unary call the client cancels while the server
holds it (a RST_STREAM, no trailers), served by generic handlers (no generated code). Prints one
line per call: METHOD STATUS."""
import sys
import threading
import time
from concurrent import futures

import grpc


def unary(request, context):
    return b"echo:" + request


def fail(request, context):
    context.abort(grpc.StatusCode.NOT_FOUND, "no such thing")


def stream(request, context):
    for index in range(3):
        yield b"part %d" % index


held = threading.Event()
released = threading.Event()


def hold(request, context):
    held.set()
    while context.is_active():  # until the client's cancel ends the call
        time.sleep(0.01)
    released.set()


handlers = {
    "Unary": grpc.unary_unary_rpc_method_handler(unary),
    "Fail": grpc.unary_unary_rpc_method_handler(fail),
    "Stream": grpc.unary_stream_rpc_method_handler(stream),
    "Hold": grpc.unary_unary_rpc_method_handler(hold),
}
server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler("test.Echo", handlers),))
port = server.add_insecure_port("127.0.0.1:0")
server.start()
failed = False
with grpc.insecure_channel("127.0.0.1:%d" % port) as channel:
    for name in ["Unary", "Unary", "Fail"]:
        call = channel.unary_unary("/test.Echo/" + name)
        try:
            call(b"hello", timeout=10)
            print(name, "OK")
        except grpc.RpcError as error:
            print(name, error.code().name)
    parts = list(channel.unary_stream("/test.Echo/Stream")(b"go", timeout=10))
    print("Stream", "OK" if len(parts) == 3 else "SHORT")
    call = channel.unary_unary("/test.Echo/Hold").future(b"wait", timeout=10)
    held.wait(10)  # the server has the call: the cancel is a RST_STREAM on an open stream
    call.cancel()
    # The server has seen the cancel (its RST_STREAM) before it stops: stopping first would end
    # the call with its own trailers (UNAVAILABLE, "Cancelling all calls") instead.
    released.wait(10)
    print("Hold", "CANCELLED" if call.cancelled() else "NOT CANCELLED")
server.stop(None).wait()
