#!/usr/bin/env python3
"""Statistics over the samples a benchmark script collected (scripts/bench-*).

The samples file has one sample per line: KEY VALUE. Commands (each prints one line):
  stats.py FILE cell KEY [DIGITS]       median (min–max), e.g. "38,274 (35,112–40,020)"
  stats.py FILE median KEY              the median, unformatted
  stats.py FILE count KEY               how many samples KEY has
  stats.py FILE ratio KEY BASE [DIGITS] KEY over BASE: the median of the ratios of the runs made
                                        side by side (sample i of KEY with sample i of BASE), and
                                        their range, e.g. "0.62× (0.55–0.70)"
  stats.py FILE diff KEY BASE [DIGITS]  the same for KEY - BASE, e.g. "+4.1 (+3.2–+5.0)"
  stats.py FILE pair ratio|diff KEY BASE  that median alone, unformatted
  stats.py FILE interval KEY BASE [DIGITS [ROUNDS]]
                                        the median of the pairs' ratios with its 95% confidence
                                        interval (bootstrap), e.g. "0.975× (95% CI 0.962–0.988)";
                                        with fewer than 10 pairs, the median alone. With ROUNDS,
                                        the pairs come from that many rounds of equal length (the
                                        servers started afresh for each): the bootstrap draws
                                        rounds, then pairs within them, so that the interval
                                        holds what one server instance's luck adds
  stats.py FILE bounds KEY BASE [ROUNDS]
                                        "MEDIAN LOW HIGH" of that, unformatted (MEDIAN alone with
                                        fewer than 10 pairs)
  stats.py FILE rounds KEY BASE ROUNDS [DIGITS]
                                        each round's median ratio, e.g. "0.981×, 0.975×, 0.990×"
"""
import random
import statistics
import sys


def median_interval(ratios, resamples=10000, rounds=1):
    """The median of `ratios` and a 95% confidence interval for it: the 2.5th and 97.5th
    percentiles of the medians of `resamples` resamples drawn with replacement (a percentile
    bootstrap; seeded, so a report can be reproduced from its samples). With `rounds` > 1 the
    ratios are that many consecutive rounds of equal length, and a resample draws rounds first,
    then ratios within each round drawn (a two-stage bootstrap)."""
    draw = random.Random(1)
    blocks = split(ratios, rounds)

    def resample():
        if len(blocks) == 1:
            return draw.choices(ratios, k=len(ratios))
        return [ratio for block in draw.choices(blocks, k=len(blocks)) for ratio in draw.choices(block, k=len(block))]

    medians = sorted(statistics.median(resample()) for _ in range(resamples))
    return statistics.median(ratios), medians[int(resamples * 0.025)], medians[int(resamples * 0.975) - 1]


def split(values, rounds):
    """`values` as `rounds` consecutive rounds of equal length (one round when they do not divide)."""
    if rounds <= 1 or len(values) % rounds != 0:
        return [values]
    size = len(values) // rounds
    return [values[index:index + size] for index in range(0, len(values), size)]


def load(path):
    samples = {}
    with open(path) as file:
        for line in file:
            parts = line.split()
            if len(parts) == 2:
                samples.setdefault(parts[0], []).append(float(parts[1]))
    return samples


def number(value, digits):
    if digits == 0:
        return f"{value:,.0f}"
    return f"{value:,.{digits}f}"


def signed(value, digits):
    return ("+" if value >= 0 else "−") + number(abs(value), digits)


def main(argv):
    path, command, key = argv[1], argv[2], argv[3]
    samples = load(path)
    values = samples.get(key, [])
    if command == "pair":
        kind, key, base = argv[3], argv[4], argv[5]
        pairs = list(zip(samples.get(key, []), samples.get(base, [])))
        results = [a / b if kind == "ratio" else a - b for a, b in pairs if kind != "ratio" or b != 0]
        print(statistics.median(results) if results else "–")
        return
    if command == "rounds":
        ratios = [a / b for a, b in zip(values, samples.get(argv[4], [])) if b != 0]
        digits = int(argv[6]) if len(argv) > 6 else 3
        print(", ".join(f"{number(statistics.median(block), digits)}×" for block in split(ratios, int(argv[5])) if block))
        return
    if command in ("interval", "bounds"):
        base = samples.get(argv[4], [])
        ratios = [a / b for a, b in zip(values, base) if b != 0]
        rounds_at = 6 if command == "interval" else 5  # after DIGITS for interval
        rounds = int(argv[rounds_at]) if len(argv) > rounds_at else 1
        if len(ratios) < 2:
            print("–" if command == "interval" else "")
            return
        if len(ratios) < 10:
            middle = statistics.median(ratios)
            print(f"{middle}" if command == "bounds" else
                  f"{number(middle, int(argv[5]) if len(argv) > 5 else 3)}× (too few pairs for an interval)")
            return
        middle, low, high = median_interval(ratios, rounds=rounds)
        if command == "bounds":
            print(middle, low, high)
        else:
            digits = int(argv[5]) if len(argv) > 5 else 3
            print(f"{number(middle, digits)}× (95% CI {number(low, digits)}–{number(high, digits)})")
        return
    if command == "count":
        print(len(values))
        return
    if not values:
        print("–")
        return
    if command == "median":
        print(statistics.median(values))
    elif command == "cell":
        digits = int(argv[4]) if len(argv) > 4 else 1
        median = number(statistics.median(values), digits)
        if len(values) == 1:
            print(median)
        else:
            print(f"{median} ({number(min(values), digits)}–{number(max(values), digits)})")
    elif command in ("ratio", "diff"):
        base = samples.get(argv[4], [])
        digits = int(argv[5]) if len(argv) > 5 else 2
        if not base:
            print("–")
            return
        pairs = list(zip(values, base))
        if command == "ratio":
            results = [a / b for a, b in pairs if b != 0]
            show = lambda v: number(v, digits)
            suffix = "×"
        else:
            results = [a - b for a, b in pairs]
            show = lambda v: signed(v, digits)
            suffix = ""
        if not results:
            print("–")
        elif len(results) == 1:
            print(f"{show(results[0])}{suffix}")
        else:
            print(f"{show(statistics.median(results))}{suffix} ({show(min(results))}–{show(max(results))})")
    else:
        sys.exit(f"stats.py: unknown command {command}")


if __name__ == "__main__":
    main(sys.argv)
