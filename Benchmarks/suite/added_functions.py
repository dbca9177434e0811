#!/usr/bin/env python3
"""Where a monitored run's added instructions go, function by function.

Reads four `callgrind_annotate --inclusive=no` listings (each function's own instructions) of one
workload: plain and injected, each at two counts of work (FEW and MANY units: requests, streams),
and prints, per unit, the instructions each function adds — (injected MANY - injected FEW) minus
(plain MANY - plain FEW), over MANY - FEW — so that start-up and warm-up cancel out. Prints the TOP
functions that add the most, a line each, as a Markdown table cell: the instructions, the function
(Swift names demangled when `swift demangle` is there) and, when it is not the monitor's
(libElfHookMonitor.so), its image. A function's own instructions, not those of what it calls: all
the functions' together are the whole, nothing counted twice.

Usage: added_functions.py UNITS TOP PLAIN_FEW PLAIN_MANY INJECTED_FEW INJECTED_MANY
"""
import re
import shutil
import subprocess
import sys

MONITOR = "libElfHookMonitor.so"
LINE = re.compile(r"\s*([\d,]+) \([^)]*\)\s+(?:[^:\[]*:)?(.+?) \[(.+)\]\s*$")


def own_costs(path):
    """Function → own instructions, from a callgrind_annotate listing (function names without
    their source file; the image as its file name)."""
    costs = {}
    with open(path) as listing:
        for line in listing:
            match = LINE.match(line)
            if not match or "PROGRAM TOTALS" in line:
                continue
            key = (match.group(2), match.group(3).rsplit("/", 1)[-1])
            costs[key] = costs.get(key, 0) + int(match.group(1).replace(",", ""))
    return costs


def demangled(names):
    """Swift symbols as `swift demangle --simplified --compact` writes them; others as they are."""
    if not shutil.which("swift") or not any(name.startswith("$s") for name in names):
        return names
    try:
        out = subprocess.run(["swift", "demangle", "--simplified", "--compact"], input="\n".join(names),
                             capture_output=True, text=True, timeout=60).stdout.splitlines()
    except (OSError, subprocess.SubprocessError):
        return names
    return out if len(out) == len(names) else names


def main():
    if len(sys.argv) != 7:
        sys.exit(__doc__.strip().splitlines()[-1])
    units, top = float(sys.argv[1]), int(sys.argv[2])
    plain_few, plain_many, injected_few, injected_many = (own_costs(path) for path in sys.argv[3:7])
    keys = set(plain_few) | set(plain_many) | set(injected_few) | set(injected_many)
    added = {key: ((injected_many.get(key, 0) - injected_few.get(key, 0))
                   - (plain_many.get(key, 0) - plain_few.get(key, 0))) / units for key in keys}
    rows = sorted((cost, key) for key, cost in added.items() if cost > 0)[::-1][:top]
    names = demangled([name for _, (name, _) in rows])
    for (cost, (_, image)), name in zip(rows, names):
        name = name if len(name) <= 60 else name[:59] + "…"
        where = "" if image == MONITOR else f" ({image})"
        print(f"{cost:,.0f} `{name}`{where}")


if __name__ == "__main__":
    main()
