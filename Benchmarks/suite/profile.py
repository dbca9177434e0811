#!/usr/bin/env python3
"""scripts/bench-profile's report: the worker's CPU a request by library, plain and monitored,
and the functions that add the most, from its `perf record -e cpu-clock` samples.

Usage: profile.py MANIFEST ROUNDS SECONDS
MANIFEST has a line a sampled server: TRANSPORT MODE ROUND REQUESTS PERF_DATA (MODE: plain or
injected; REQUESTS: what the server served while it was sampled). Samples are at 10 kHz, so a
sample is 100 µs of CPU; µs a request = samples × 100 / requests. Each figure is the median over
the rounds; "added" is the median of the rounds' differences (a round's two servers ran one after
the other). Prints Markdown.
"""
import statistics
import subprocess
import sys

SAMPLE_US = 100.0  # perf record -F 10000
GROUPS = [  # (name in the table, test on perf's shared object name)
    ("the kernel", lambda dso: dso == "[kernel.kallsyms]"),
    ("nginx", lambda dso: dso == "nginx"),
    ("libc", lambda dso: dso.startswith("libc.so") or dso.startswith("libm.so")),
    ("OpenSSL (libssl, libcrypto)", lambda dso: dso.startswith("libssl") or dso.startswith("libcrypto")),
    ("the monitor (libElfHook*)", lambda dso: dso.startswith("libElfHook")),
    ("the vDSO (clock reads)", lambda dso: dso == "[vdso]"),
]
TRANSPORTS = {"http": "HTTP/1.1", "https": "HTTPS (TLS 1.3)", "h2": "HTTP/2 over TLS (`h2load -c16 -m10 -i`)"}


def report(path, sort):
    """Samples by `sort` (dso, or dso,sym) in the perf data at `path`: {key tuple: samples}."""
    out = subprocess.run(["perf", "report", "-i", path, "--stdio", "-n", "--sort", sort, "-t", ";"],
                         capture_output=True, text=True, check=True).stdout
    counts = {}
    for line in out.splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        fields = [field.strip() for field in line.split(";")]
        if len(fields) < 3 or not fields[1].isdigit():
            continue
        key = tuple(fields[2:])
        counts[key] = counts.get(key, 0) + int(fields[1])
    return counts


def group_of(dso):
    for name, test in GROUPS:
        if test(dso):
            return name
    return "other"


def per_request(counts, requests):
    return {key: samples * SAMPLE_US / requests for key, samples in counts.items()}


def median_added(rounds, key):
    """Median over rounds of monitored − plain for `key`, and the two medians."""
    plain = [r["plain"].get(key, 0.0) for r in rounds]
    injected = [r["injected"].get(key, 0.0) for r in rounds]
    added = [i - p for p, i in zip(plain, injected)]
    return statistics.median(plain), statistics.median(injected), statistics.median(added)


def main(argv):
    manifest, round_count, seconds = argv[1], int(argv[2]), argv[3]
    runs = {}
    for line in open(manifest):
        transport, mode, round_number, requests, path = line.split()
        run = runs.setdefault(transport, {}).setdefault(round_number, {})
        requests = int(requests)
        libraries = {}
        for (dso,), samples in report(path, "dso").items():
            group = group_of(dso)
            libraries[group] = libraries.get(group, 0) + samples
        libraries["total"] = sum(libraries.values())
        run[mode] = per_request(libraries, requests)
        run[mode + ".functions"] = per_request(
            {(dso, symbol.split("] ", 1)[-1]): samples for (dso, symbol), samples in report(path, "dso,sym").items()},
            requests)
        run[mode + ".requests"] = requests
    print("### Where nginx's CPU goes (`scripts/bench-profile`)\n")
    print(f"nginx's worker alone, on CPU 0, sampled by `perf record -e cpu-clock` at 10 kHz for {seconds} s "
          f"under the varied workload (every request another file, query and header), plain and under "
          f"`elfhook run` in turn, {round_count} round(s); µs of CPU a request, medians over the rounds. "
          "Sampling sees time, waits included; its own interrupts add to the kernel's share on both sides.\n")
    for transport, by_round in runs.items():
        rounds = [r for r in by_round.values() if "plain" in r and "injected" in r]
        if not rounds:
            continue
        print(f"**{TRANSPORTS.get(transport, transport)}** "
              f"({statistics.median(r['plain.requests'] for r in rounds):,.0f} and "
              f"{statistics.median(r['injected.requests'] for r in rounds):,.0f} requests sampled a round):\n")
        print("| where | plain µs a request | monitored | added |")
        print("|---|---|---|---|")
        for name in ["total"] + [name for name, _ in GROUPS] + ["other"]:
            plain, injected, added = median_added(rounds, name)
            if plain == 0 and injected == 0:
                continue
            label = "**all of the worker's CPU**" if name == "total" else name
            print(f"| {label} | {plain:.3f} | {injected:.3f} | {added:+.3f} |")
        rounds_functions = [{"plain": r["plain.functions"], "injected": r["injected.functions"]} for r in rounds]
        keys = set().union(*[set(r["plain"]) | set(r["injected"]) for r in rounds_functions])
        added = sorted(((median_added(rounds_functions, key), key) for key in keys), key=lambda row: -row[0][2])
        print("\nThe functions that add the most, each its own time (µs a request, plain → monitored):\n")
        print("| function | library | plain | monitored | added |")
        print("|---|---|---|---|---|")
        for (plain, injected, difference), (dso, symbol) in added[:14]:
            name = symbol if len(symbol) <= 60 else symbol[:57] + "…"
            print(f"| `{name}` | {dso} | {plain:.3f} | {injected:.3f} | {difference:+.3f} |")
        print()


if __name__ == "__main__":
    main(sys.argv)
