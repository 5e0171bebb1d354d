#!/usr/bin/env python3
"""Two builds of a divan benchmark with a throughput counter, run side by side: alternately,
ROUNDS times each, on the same machine in one run. Prints each benchmark's items a second
(fastest and median sample of each run, the best and the median over runs) and the ratio of
the second build to the first.

Usage: ci/bench-compare.py BEFORE AFTER [ROUNDS] [-- ARGS...]
  BEFORE, AFTER: benchmark executables (`cargo bench --no-run` prints their paths)
  ARGS: passed to both (divan's own, such as --sample-count)
"""
import re
import statistics
import subprocess
import sys

UNITS = {"": 1e-6, "K": 1e-3, "M": 1.0, "G": 1e3}


def rates(exe, args):
    """(benchmark, [fastest, median]) in millions of items a second, in divan's order."""
    out = subprocess.run([exe, "--bench", *args], capture_output=True, text=True, check=True).stdout
    rows, group, name = [], "", None
    for line in out.splitlines():
        found = re.findall(r"([\d.]+) ([KMG]?)item/s", line)
        if found:
            # fastest, slowest, median, mean
            v = [float(x) * UNITS[u] for x, u in found]
            rows.append((name, [v[0], v[2]]))
            continue
        m = re.search(r"[├╰]─ (\S+)", line)
        if m and re.search(r"[\d.]+ (ns|µs|ms|s)\b", line):
            name = f"{group}/{m.group(1)}" if group else m.group(1)
        elif m:
            group = m.group(1)
    return rows


def main():
    argv = sys.argv[1:]
    extra = argv[argv.index("--") + 1 :] if "--" in argv else []
    argv = argv[: argv.index("--")] if "--" in argv else argv
    if len(argv) not in (2, 3):
        sys.exit(__doc__)
    builds = argv[:2]
    rounds = int(argv[2]) if len(argv) == 3 else 5
    runs = [[], []]
    for _ in range(rounds):
        for i, exe in enumerate(builds):
            runs[i].append(rates(exe, extra))
    names = [n for n, _ in runs[0][0]]
    if any([n for n, _ in r] != names for b in runs for r in b):
        sys.exit("the two builds list different benchmarks")
    print(f"millions of items a second; {rounds} alternating runs of each build")
    print(f"before: {builds[0]}\nafter:  {builds[1]}")
    head = "best fastest sample (before, after, ratio) | median of medians (before, after, ratio)"
    print(f"{'benchmark':<20} {head}")
    for k, name in enumerate(names):
        before = [r[k][1] for r in runs[0]]
        after = [r[k][1] for r in runs[1]]
        fb, fa = max(v[0] for v in before), max(v[0] for v in after)
        mb, ma = statistics.median(v[1] for v in before), statistics.median(v[1] for v in after)
        print(f"{name:<20} {fb:8.0f} {fa:8.0f} {fa / fb:6.2f}   | {mb:8.0f} {ma:8.0f} {ma / mb:6.2f}")


if __name__ == "__main__":
    main()
