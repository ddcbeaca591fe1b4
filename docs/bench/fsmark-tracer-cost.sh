#!/usr/bin/env bash
# Issue 25: what the BPF tracer costs small-files' fs_mark (a create, 16 writes of 4 KiB,
# an fsync and a close a file: since f609c0a the tracer follows the creates and closes of
# a run's measuring thread as well as its writes and sync calls). Three sides, interleaved
# round by round in a balanced order (docs/bench/balanced_orders.py), on a scratch ext4
# whose image is in RAM (`--device ram`: the disk hides nothing):
#   none          $FSYNCLAB run small-files ... --no-explain
#   bpf           $FSYNCLAB run small-files ... --explain --tracer bpf
#   baseline-bpf  $FSYNCLAB_BASELINE (another build) with --explain --tracer bpf
# Each line: round, side, fs_mark's files/s (files over its elapsed time). Then the medians
# and the round-by-round ratio of bpf to baseline-bpf.
#
# As root. Usage: FSYNCLAB_BASELINE=path docs/bench/fsmark-tracer-cost.sh [ROUNDS] [FILES]
# FSYNCLAB defaults to target/release/fsynclab; every run goes through
# `flock /tmp/fsynclab-bench.lock` (one benchmark at a time on the machine).
set -euo pipefail
rounds=${1:-7}
files=${2:-2000}
fsynclab=${FSYNCLAB:-target/release/fsynclab}
baseline=${FSYNCLAB_BASELINE:?FSYNCLAB_BASELINE names the other build}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
trap 'exit 130' INT TERM
sides=(none baseline-bpf bpf)
for round in $(seq 1 "$rounds"); do
  for i in $("$(dirname "$0")"/balanced_orders.py 3 "$round"); do
    side=${sides[$i]}
    binary=$fsynclab flags=(--explain --tracer bpf)
    [ "$side" = none ] && flags=(--no-explain)
    [ "$side" = baseline-bpf ] && binary=$baseline
    rate=$(flock /tmp/fsynclab-bench.lock "$binary" run small-files --scratch ext4 --device ram \
      --set mode=fs_mark --set files="$files" "${flags[@]}" --no-store --format json 2>/dev/null |
      python3 -c "import json,sys; f=json.load(sys.stdin)['details']['small-files']['fs_mark']; print(round(f['files']/(f['elapsed_ns']/1e9),1))")
    echo "round $round $side $rate" | tee -a "$out"
  done
done
python3 - "$out" <<'PY'
import re, statistics, sys
d = {}
for line in open(sys.argv[1]):
    m = re.match(r"round (\d+) (\S+) ([\d.]+)", line)
    if m:
        d.setdefault(int(m[1]), {})[m[2]] = float(m[3])
none = statistics.median(r["none"] for r in d.values())
for side in ("none", "baseline-bpf", "bpf"):
    v = [r[side] for r in d.values()]
    print(f"{side}: median {statistics.median(v):.1f} files/s = {statistics.median(v) / none:.3f}x untraced (rounds {min(v):.0f}-{max(v):.0f})")
ratios = [d[k]["bpf"] / d[k]["baseline-bpf"] for k in sorted(d)]
print("bpf / baseline-bpf by round:", ", ".join(f"{r:.3f}" for r in ratios), f"(median {statistics.median(ratios):.3f})")
PY
