#!/usr/bin/env python3
"""Summarizes small-files-datasync.sh output: per test, the median of each tool's figures
and the median of the per-pair ratios fsynclab / other tool."""
import statistics
import sys
from collections import defaultdict

figures = defaultdict(lambda: defaultdict(dict))  # test -> pair -> tool -> value
for line in sys.stdin:
    test, pair, tool, value = line.rstrip("\n").split("\t")
    figures[test][pair][tool] = float(value)

print("| test | fsynclab median | other tool | other median | median ratio fsynclab/other | pairs |")
print("|---|---:|---|---:|---:|---:|")
for test, pairs in figures.items():
    tools = sorted({t for p in pairs.values() for t in p} - {"fsynclab"})
    for other in tools:
        both = [p for p in pairs.values() if "fsynclab" in p and other in p and p[other] > 0]
        a = statistics.median(p["fsynclab"] for p in both)
        b = statistics.median(p[other] for p in both)
        r = statistics.median(p["fsynclab"] / p[other] for p in both)
        print(f"| {test} | {a:.0f} | {other} | {b:.0f} | {r:.2f} | {len(both)} |")
