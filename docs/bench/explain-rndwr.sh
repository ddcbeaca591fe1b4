#!/usr/bin/env bash
# Issue 61: what `--explain` costs rndwr's throughput, side by side: `fsynclab run rndwr`
# (16 threads, 10 s, the scenario's defaults otherwise) with `--no-explain` and with
# `--explain` (the default tracer: BPF where the kernel allows it), interleaved, the order
# alternating round by round, on the same directory. Prints each round's requests/s and
# explained/unexplained ratio, then the median of the per-round ratios.
#
#   docs/bench/explain-rndwr.sh DIR [ROUNDS]      as root; ROUNDS default 7
#
# FSYNCLAB=path/to/fsynclab (default target/release/fsynclab). Nothing is stored
# (--no-store); the runs' files are removed by fsynclab itself, DIR too if this script made it.
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: $0 DIR [ROUNDS]" >&2; exit 2; }
dir=$1
rounds=${2:-7}
fsynclab=${FSYNCLAB:-target/release/fsynclab}
[ -x "$fsynclab" ] || { echo "$0: $fsynclab is not built (cargo build --release)" >&2; exit 2; }
made=
[ -d "$dir" ] || made=$dir
mkdir -p "$dir"
out=$(mktemp)
trap 'rm -f "$out"; [ -z "$made" ] || rm -rf "$made"' EXIT
trap 'exit 130' INT TERM

# rate EXPLAIN-FLAG: one run's requests/s.
rate() {
  "$fsynclab" run rndwr --dir "$dir" --quiet --no-store --format json "$1" \
    --set threads=16 --set duration=10s >"$out"
  python3 -c "import json; print('%.1f' % json.load(open('$out'))['tables'][0]['rows'][0][0])"
}

ratios=()
for round in $(seq 1 "$rounds"); do
  if [ $((round % 2)) -eq 1 ]; then
    off=$(rate --no-explain); on=$(rate --explain)
  else
    on=$(rate --explain); off=$(rate --no-explain)
  fi
  ratio=$(python3 -c "print('%.3f' % ($on / $off))")
  ratios+=("$ratio")
  echo "round $round: --no-explain $off requests/s, --explain $on requests/s, ratio $ratio"
done
python3 -c "
import statistics, sys
r = [float(x) for x in sys.argv[1:]]
print('median explained/unexplained %.3f over %d rounds (%.3f-%.3f)' % (statistics.median(r), len(r), min(r), max(r)))
" "${ratios[@]}"
