#!/usr/bin/env python3
"""Two HTTP servers loaded in turns a fraction of a second long: the throughput ratio of the
second to the first, resolved finer than one-second runs can on a noisy machine.

Usage: alternate.py PAIRS WINDOW_S SAMPLES PLAIN_PORT PLAIN_PID INJECTED_PORT INJECTED_PID
                    CONSUMER_PID URL_PATH [PREFIX [PLAIN_URL INJECTED_URL LOAD…]]

URL_PATH is a path on http://127.0.0.1:PORT, or a whole URL with `{port}` for the port (https://
too: the counter is then read over TLS, unverified).

Both servers (nginx with `location = /st { stub_status; }` on PLAIN_PORT and INJECTED_PORT) stay
up. One load generator runs against each for the whole measurement, stopped (SIGSTOP) but for its
turns: a turn continues one of them for WINDOW_S seconds and stops it again. The load is
`wrk -t2 -c32` on URL_PATH's URL; with PLAIN_URL, INJECTED_URL and LOAD, it is the
command LOAD with the server's URL as its last argument (e.g. `h2load -c16 -m10 -D 3600` against
an HTTP/2 listener, the counter staying on the HTTP/1.x port), `{port}` in any of LOAD's arguments
replaced by the port of that URL (a file of the server's own URLs: `h2load -i uris-{port}.txt`).
The pairs of turns go plain then injected, then injected then plain (ABBA), so that a drift within a pair falls on both alike. A turn's requests
are read from the server's own counter (stub_status's "requests", one connection kept open to
it; the reading itself is not counted), 10 ms after the load stopped so that its last requests
are counted where they were sent.

Why turns so short: this VM's throughput moves by ~12% from one 50 ms interval to the next
(sampled from stub_status under a steady load), about as much as from one second to the next.
Pairs of 1-second runs therefore resolve no better than pairs of 0.2-second turns, and the short
turns give five times as many pairs a minute.

Appends to SAMPLES, one line per turn: PREFIX.rps.plain, PREFIX.rps.injected (requests per
second of the turn), PREFIX.cpu_us.plain, PREFIX.cpu_us.injected (the server's CPU time per
request: every thread's run time from /proc/PID/task/*/schedstat, in µs) and, for injected
turns, PREFIX.consumer_us (the same for CONSUMER_PID, `elfhook run` draining the rings); PREFIX
is "alt" unless given. Exits 1 with one line on stderr when a server stops answering or a load
generator exits.
"""
import http.client
import os
import signal
import ssl
import subprocess
import sys
import time
import urllib.parse


def run_time_ns(pid):
    """CPU time every thread of `pid` ran, in nanoseconds (the first schedstat field)."""
    total = 0
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{task}/schedstat") as file:
                total += int(file.read().split()[0])
        except (FileNotFoundError, ProcessLookupError):
            pass  # a thread that ended meanwhile
    return total


class Counter:
    """A server's stub_status request count, over one kept-alive connection."""

    def __init__(self, port, tls=False):
        self.port = port
        self.tls = tls
        self.connection = None

    def read(self):
        for _ in range(3):
            try:
                if self.connection is None and self.tls:
                    self.connection = http.client.HTTPSConnection(
                        "127.0.0.1", self.port, timeout=5, context=ssl._create_unverified_context())
                elif self.connection is None:
                    self.connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=5)
                self.connection.request("GET", "/st")
                lines = self.connection.getresponse().read().decode().splitlines()
                return int(lines[2].split()[2])  # "server accepts handled requests", then the numbers
            except (OSError, http.client.HTTPException, IndexError, ValueError):
                self.connection = None
        sys.exit(f"alternate.py: the server on 127.0.0.1:{self.port} no longer answers /st")


def main(argv):
    pairs, window, samples_path = int(argv[1]), float(argv[2]), argv[3]
    plain_port, plain_pid, injected_port, injected_pid = int(argv[4]), int(argv[5]), int(argv[6]), int(argv[7])
    consumer_pid, path = int(argv[8]), argv[9]
    prefix = argv[10] if len(argv) > 10 else "alt"
    url = path if "://" in path else "http://127.0.0.1:{port}" + path
    tls = url.startswith("https:")
    if len(argv) > 13:
        urls, load = {"plain": argv[11], "injected": argv[12]}, argv[13:]
    else:
        urls = {"plain": url.replace("{port}", str(plain_port)), "injected": url.replace("{port}", str(injected_port))}
        load = ["wrk", "-t2", "-c32", "-d1h", "--timeout", "5s"]
    arms = {
        "plain": (Counter(plain_port, tls), plain_pid),
        "injected": (Counter(injected_port, tls), injected_pid),
    }
    loads = {}
    for name, (counter, _) in arms.items():
        counter.read()
        port = str(urllib.parse.urlsplit(urls[name]).port)
        command = [argument.replace("{port}", port) for argument in load] + [urls[name]]
        loads[name] = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(0.5)  # both connect and warm up at once, then wait for their turns
        for load in loads.values():
            load.send_signal(signal.SIGSTOP)
        time.sleep(0.05)
        with open(samples_path, "a") as samples:
            def turn(name):
                counter, pid = arms[name]
                load = loads[name]
                if load.poll() is not None:
                    sys.exit(f"alternate.py: the load against the {name} server exited ({load.returncode})")
                before = counter.read()
                cpu, consumer = run_time_ns(pid), run_time_ns(consumer_pid)
                start = time.monotonic()
                load.send_signal(signal.SIGCONT)
                time.sleep(window)
                load.send_signal(signal.SIGSTOP)
                seconds = time.monotonic() - start
                time.sleep(0.01)
                cpu, consumer = run_time_ns(pid) - cpu, run_time_ns(consumer_pid) - consumer
                requests = counter.read() - before - 1  # not the reading before
                if requests <= 0:
                    sys.exit(f"alternate.py: the {name} server answered no request in a {window} s turn")
                samples.write(f"{prefix}.rps.{name} {requests / seconds:.1f}\n")
                samples.write(f"{prefix}.cpu_us.{name} {cpu / requests / 1000:.3f}\n")
                if name == "injected":
                    samples.write(f"{prefix}.consumer_us {consumer / requests / 1000:.3f}\n")
            for pair in range(pairs):
                order = ("plain", "injected") if pair % 2 == 0 else ("injected", "plain")
                for name in order:
                    turn(name)
    finally:
        for load in loads.values():
            load.kill()
            load.wait()


if __name__ == "__main__":
    main(sys.argv)
