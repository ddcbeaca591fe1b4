#!/usr/bin/env python3
"""What each tracer behind --explain costs whole runs (issue 25): rndwr's requests/s with its
16 worker threads traced, and an fsync-tps run's wall time and peak memory, each run
untraced (--no-explain), with tracefs (--explain --tracer tracefs) and with the BPF tracer
(--explain --tracer bpf), the sides interleaved round by round. Round n runs the sides in
the n-th order of a Williams design (docs/bench/balanced_orders.py: 2 orders for
two sides, 6 for three, 4 for four), so over a multiple of that many rounds each side runs
right after each other side equally often: a run that suffers from what the run before it
left behind is not always the same side.

Usage (root, release build, alone on the machine):
    docs/bench/tracer-cost.py DIR [ROUNDS]
DIR is where the runs write (the host's disk); ROUNDS defaults to 3. FSYNCLAB names the
binary (default target/release/fsynclab), FSYNCLAB_BENCH_SCENARIOS which of rndwr and
fsync-tps (default both), FSYNCLAB_BENCH_SIDES which sides (default none,tracefs,bpf; none is
always run), FSYNCLAB_BASELINE a second binary run as one more side, `baseline-bpf`
(`--explain --tracer bpf`), to compare two builds of the BPF tracer in the same rounds. Every run goes through
`flock /tmp/fsynclab-bench.lock /usr/bin/time -f '%e %M'`. Prints one line a run, then the
medians and the ratios to the untraced side, and for rndwr each side's ratio to the untraced
run of its own round.
"""

import json
import os
import statistics
import subprocess
import sys
import tempfile

from balanced_orders import balanced_orders  # beside this script

SIDES = {
    "none": ["--no-explain"],
    "tracefs": ["--explain", "--tracer", "tracefs"],
    "bpf": ["--explain", "--tracer", "bpf"],
}
SCENARIOS = {
    "rndwr": ["--set", "duration=20s"],
    "fsync-tps": [],
}


def run(binary, scenario, side, directory):
    if side == "baseline-bpf":
        binary, side = os.environ["FSYNCLAB_BASELINE"], "bpf"
    with tempfile.TemporaryDirectory() as tmp:
        result, timing = os.path.join(tmp, "r.json"), os.path.join(tmp, "time")
        cmd = ["flock", "/tmp/fsynclab-bench.lock", "/usr/bin/time", "-f", "%e %M", "-o", timing,
               binary, "run", scenario, "--dir", directory, "--no-store", "-q", "--format", "json",
               "-o", result] + SIDES[side] + SCENARIOS[scenario]
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
        wall, rss_kib = open(timing).read().split()[-2:]
        r = json.load(open(result))
    figure = (r["details"]["rndwr"]["summary"]["requests_per_s"] if scenario == "rndwr"
              else r["duration_s"])
    return float(wall), int(rss_kib), figure


def main():
    directory = sys.argv[1]
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    binary = os.environ.get("FSYNCLAB", "target/release/fsynclab")
    os.makedirs(directory, exist_ok=True)
    seen = {}
    names = ["none"] + [s for s in os.environ.get("FSYNCLAB_BENCH_SIDES", "tracefs,bpf").split(",")
                        if s in SIDES and s != "none"]
    if os.environ.get("FSYNCLAB_BASELINE"):
        names.append("baseline-bpf")
    scenarios = os.environ.get("FSYNCLAB_BENCH_SCENARIOS", ",".join(SCENARIOS)).split(",")
    orders = [[names[i] for i in o] for o in balanced_orders(len(names))]
    if rounds % len(orders):
        print(f"note: {rounds} rounds is not a multiple of the sides' {len(orders)} orders, so not "
              "every side follows every other equally often", file=sys.stderr)
    for n in range(rounds):
        order = orders[n % len(orders)]
        print(f"round {n + 1}: order {', '.join(order)}", flush=True)
        for scenario in scenarios:
            for side in order:
                wall, rss, figure = run(binary, scenario, side, directory)
                seen.setdefault((scenario, side), []).append((wall, rss, figure))
                print(f"round {n + 1} {scenario} {side}: wall {wall:.2f} s, peak {rss / 1024:.0f} MiB, "
                      f"{'requests/s' if scenario == 'rndwr' else 'measured s'} {figure:.2f}", flush=True)
    for scenario in scenarios:
        base = seen[(scenario, "none")]
        for side in names:
            runs = seen[(scenario, side)]
            med = [statistics.median(x[i] for x in runs) for i in range(3)]
            ref = [statistics.median(x[i] for x in base) for i in range(3)]
            if scenario == "rndwr":
                paired = [r[2] / b[2] for r, b in zip(runs, base)]
                print(f"{scenario} {side}: median {med[2]:.1f} requests/s = {med[2] / ref[2]:.3f}x untraced; "
                      f"peak {med[1] / 1024:.0f} MiB = {med[1] / ref[1]:.2f}x; round by round "
                      f"{', '.join(f'{p:.3f}' for p in paired)} (median {statistics.median(paired):.3f}x)")
            else:
                print(f"{scenario} {side}: median wall {med[0]:.2f} s for {med[2]:.2f} s measured "
                      f"({(med[0] / med[2] - 1) * 100:+.1f}%), {med[0] / ref[0]:.3f}x untraced wall; "
                      f"peak {med[1] / 1024:.0f} MiB = {med[1] / ref[1]:.2f}x untraced")


if __name__ == "__main__":
    main()
