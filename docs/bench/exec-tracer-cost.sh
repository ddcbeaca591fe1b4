#!/usr/bin/env bash
# Issue 25: what `fsynclab exec --explain` costs the command it traces, with each tracer.
# fio writes 4 KiB and fsyncs after every write (`--fsync=1`, the worst case for a tracer:
# two system calls a write, tens of thousands a second) for SECONDS on a scratch ext4 whose
# image is on a private tmpfs (`--device ram`: flushes cost nothing, so the tracer's cost is
# not hidden behind a disk). Three sides, interleaved round by round in a balanced order
# (docs/bench/balanced_orders.py):
#   none     fsynclab exec without --explain (the same scratch filesystem, nothing traced)
#   tracefs  exec --explain --tracer tracefs
#   bpf      exec --explain --tracer bpf
# Each line: round, side, fio's write IOPS, its fsync latency median (us), the whole
# command's wall time (s) and peak memory (KiB, /usr/bin/time), the sync calls fsynclab
# counted. Then the medians of each side and of the round-by-round IOPS ratios.
#
# As root (loop devices, tracefs, BPF). Usage: docs/bench/exec-tracer-cost.sh ROUNDS SECONDS
# FSYNCLAB=path/to/fsynclab (default: target/release/fsynclab); SIDES="none bpf" runs only
# those; FSYNCLAB_BASELINE=path/to/another/fsynclab adds a side `baseline-bpf`, that binary's
# exec --explain --tracer bpf, to compare two builds of the BPF tracer in the same rounds.
set -euo pipefail
rounds=${1:-3}
seconds=${2:-10}
fsynclab=${FSYNCLAB:-target/release/fsynclab}
work=$(mktemp -d /var/tmp/fsynclab-exec-cost-XXXXXX)
trap 'rm -rf "$work"' EXIT
trap 'exit 130' INT TERM

one() { # side round
  local side=$1 round=$2 flags=() binary=$fsynclab
  case $side in
    tracefs) flags=(--explain --tracer tracefs --no-store) ;;
    bpf) flags=(--explain --tracer bpf --no-store) ;;
    baseline-bpf) flags=(--explain --tracer bpf --no-store) binary=$FSYNCLAB_BASELINE ;;
  esac
  /usr/bin/time -f '%e %M' -o "$work/time" "$binary" exec --scratch ext4 --device ram \
    --backing "$work" "${flags[@]}" -- \
    fio --name=w --filename=f --rw=write --bs=4k --size=256m --fsync=1 --ioengine=sync \
      --time_based --runtime="$seconds" --output-format=json >"$work/fio.json" 2>"$work/err"
  local calls
  calls=$(grep -o '[0-9]* sync calls traced' "$work/err" | cut -d' ' -f1 || true)
  python3 - "$work/fio.json" "$work/time" "$side" "$round" "${calls:--}" <<'EOF'
import json, sys
fio = json.load(open(sys.argv[1]))["jobs"][0]
wall, peak = open(sys.argv[2]).read().split()
sync = fio["sync"]["lat_ns"]["percentile"].get("50.000000", 0) / 1000
print(f"{sys.argv[4]}\t{sys.argv[3]}\t{fio['write']['iops']:.0f}\t{sync:.1f}\t{wall}\t{peak}\t{sys.argv[5]}")
EOF
}

read -ra sides <<<"${SIDES:-none tracefs bpf}"
[ -n "${FSYNCLAB_BASELINE:-}" ] && sides+=(baseline-bpf)
n=${#sides[@]}
echo -e "round\tside\tiops\tfsync_p50_us\twall_s\tpeak_kib\tcalls" | tee "$work/all.tsv"
for ((r = 1; r <= rounds; r++)); do
  for i in $("$(dirname "$0")"/balanced_orders.py "$n" "$r"); do
    one "${sides[$i]}" "$r" | tee -a "$work/all.tsv"
  done
done
python3 - "$work/all.tsv" <<'EOF'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
by = {}
for r in rows:
    by.setdefault(r["side"], {})[r["round"]] = r
for side in by:
    rs = list(by[side].values())
    med = lambda k: statistics.median(float(r[k]) for r in rs)
    ratio = ""
    if side != "none":
        ratios = [float(by[side][k]["iops"]) / float(by["none"][k]["iops"]) for k in by[side]]
        ratio = f"  iops/none median {statistics.median(ratios):.3f} (rounds {min(ratios):.3f}-{max(ratios):.3f})"
    print(f"{side:8} median iops {med('iops'):.0f}  fsync p50 {med('fsync_p50_us'):.1f} us  wall {med('wall_s'):.2f} s  peak {med('peak_kib')/1024:.0f} MiB{ratio}")
EOF
