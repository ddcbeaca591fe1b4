#!/usr/bin/env bash
# Issue 61: what `--explain --tracer bpf` costs a 4 KiB fsync once the tracer is running:
# the bare prober (overwrite-fsync, no background writer, 20,000 fsyncs a run, so that the
# tracer's start is a small part of each run) on a scratch ext4 whose loop image is in RAM,
# `--no-explain` against `--explain --tracer bpf`, interleaved (the order alternating round
# by round), first on a quiet machine, then beside two CPU-burning processes (one per CPU of
# the project's VM). Prints each round's median fsync of both and their ratio.
#
#   docs/bench/explain-fsync-steady.sh BINARY [ROUNDS]     as root, alone on the machine
#
# ROUNDS defaults to 5. Nothing is stored; the scratch image and the burners are removed on
# any exit.
set -euo pipefail
F=${1:?usage: docs/bench/explain-fsync-steady.sh BINARY [ROUNDS]}
rounds=${2:-5}
d=$(mktemp -d /dev/shm/fsynclab-steady.XXXX)
burners=()
trap 'rm -rf "$d"; [ ${#burners[@]} -eq 0 ] || kill "${burners[@]}" 2>/dev/null || true' EXIT
trap 'exit 130' INT TERM
median_fsync() {
  python3 -c "import json, statistics; r = json.load(open('$1'))
print('%.2f' % statistics.median(s['latency_ns'] / 1e3 for s in r['samples'] if s['op'] == 'fsync'))"
}
one() {
  FSYNCLAB_STORE=off "$F" run overwrite-fsync --quiet --format json "$@" --scratch ext4 \
    --scratch-size 1G --backing "$d" --set background=none --set sleep=0 --set duration=0 \
    --set write_size=4k --set iterations=20000 >"$d/r.json"
  median_fsync "$d/r.json"
}
for condition in quiet busy; do
  if [ "$condition" = busy ]; then
    for _ in 1 2; do sh -c 'while :; do :; done' & burners+=($!); done
  fi
  for r in $(seq 1 "$rounds"); do
    if [ $((r % 2)) -eq 1 ]; then
      off=$(one --no-explain); on=$(one --explain --tracer bpf)
    else
      on=$(one --explain --tracer bpf); off=$(one --no-explain)
    fi
    echo "$condition round $r: --no-explain $off us, --explain --tracer bpf $on us, ratio $(python3 -c "print('%.3f' % ($on / $off))")"
  done
done
