#!/usr/bin/env bash
# What the BPF tracer's attach points cost before its programs do any work (issue 25): the
# median fsync of fsynclab's bare prober (overwrite-fsync, no background writer) on a scratch
# ext4 whose loop image is in RAM, three sides interleaved round by round:
#   untraced      --no-explain
#   empty hooks   --no-explain, with a program that does nothing attached at each of the
#                 25 trace points the tracer uses here (hook-cost/empty.bpf.c)
#   BPF tracer    --explain --tracer bpf
# The first difference is what hooking those points costs; the second what the tracer's
# programs and its reader add on top. Then one more BPF run with kernel.bpf_stats_enabled=1
# (restored afterwards) gives the programs' own run time a fsync: each program is pinned in
# a private bpffs while the run holds it, so its count covers the whole run.
#
# Usage (root, alone on the machine; clang and libbpf-dev, as scripts/setup.sh installs):
#     docs/bench/bpf-hook-cost.sh BINARY [ROUNDS] [WRITE_BYTES] [FSYNCS]
# ROUNDS defaults to 7, WRITE_BYTES to 4096, FSYNCS (a run) to 1000. Takes
# /tmp/fsynclab-bench.lock; leaves nothing behind (the programs are detached on any exit).
set -euo pipefail
bin=${1:?usage: docs/bench/bpf-hook-cost.sh BINARY [ROUNDS] [WRITE_BYTES] [FSYNCS]}
rounds=${2:-7}
write=${3:-4096}
fsyncs=${4:-1000}
here=$(cd "$(dirname "$0")" && pwd)
exec 9>/tmp/fsynclab-bench.lock
flock 9
tmp=$(mktemp -d)
holder=""
stats=$(sysctl -n kernel.bpf_stats_enabled)
cleanup() {
  [ -n "$holder" ] && kill "$holder" 2>/dev/null
  wait
  sysctl -q kernel.bpf_stats_enabled="$stats"
  mountpoint -q "$tmp/bpffs" && umount "$tmp/bpffs"
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
clang -O2 -target bpf -c "$here/hook-cost/empty.bpf.c" -o "$tmp/empty.o"
cc -O2 "$here/hook-cost/attach.c" -o "$tmp/attach" -lbpf

prober() {
  "$bin" run overwrite-fsync --quiet --format json --no-store "$@" --scratch ext4 --device ram \
    --set background=none --set sleep=0 --set duration=0 --set "write_size=$write" \
    2>"$tmp/stderr" || { cat "$tmp/stderr" >&2; exit 1; }
}
median_fsync_us() {
  prober --set "iterations=$fsyncs" "$@" |
    python3 -c 'import json, statistics, sys
r = json.load(sys.stdin)
if "--explain" in sys.argv and not r.get("explain", {}).get("events"):
    sys.exit("bpf-hook-cost: the BPF side ran untraced (the tracer did not start: run it by hand to see why)")
print(round(statistics.median(s["latency_ns"] / 1e3 for s in r["samples"] if s["op"] == "fsync"), 1))' "$@"
}

echo "median fsync (us), $write-byte writes, $fsyncs fsyncs a run"
echo "round untraced empty-hooks bpf-tracer"
for r in $(seq "$rounds"); do
  off=$(median_fsync_us --no-explain)
  "$tmp/attach" "$tmp/empty.o" >"$tmp/attached" &
  holder=$!
  until [ -s "$tmp/attached" ]; do
    kill -0 "$holder" 2>/dev/null || { echo "bpf-hook-cost: the empty programs did not attach" >&2; exit 1; }
    sleep 0.1
  done
  hooks=$(median_fsync_us --no-explain)
  kill "$holder"; wait "$holder" || true; holder=""
  bpf=$(median_fsync_us --explain --tracer bpf)
  echo "$r $off $hooks $bpf" | tee -a "$tmp/rounds"
done
python3 - "$tmp/rounds" <<'PY'
import statistics, sys
rows = [list(map(float, l.split()[1:])) for l in open(sys.argv[1])]
off, hooks, bpf = (statistics.median(c) for c in zip(*rows))
print(f"medians: untraced {off:.1f}, empty hooks {hooks:.1f} ({hooks - off:+.1f} us, {hooks / off:.3f}x), "
      f"BPF tracer {bpf:.1f} ({bpf - off:+.1f} us, {bpf / off:.3f}x)")
PY

# The programs' own time: a run of 10x the fsyncs, its programs pinned as soon as loaded.
mkdir "$tmp/bpffs"
mount -t bpf bpf "$tmp/bpffs"
sysctl -q kernel.bpf_stats_enabled=1
prober --set "iterations=$((fsyncs * 10))" --explain --tracer bpf >"$tmp/run.json" &
run=$!
until bpftool prog show --json | python3 -c 'import json, sys
sys.exit(not any(p["name"] == "on_sys_exit" for p in json.load(sys.stdin)))'; do
  kill -0 "$run" 2>/dev/null || { echo "bpf-hook-cost: the tracer's programs were not seen" >&2; exit 1; }
  sleep 0.05
done
bpftool prog show --json | python3 -c 'import json, sys
for p in json.load(sys.stdin):
    if p["name"].startswith("on_"):
        print(p["id"], p["name"])' | while read -r id name; do
  bpftool prog pin id "$id" "$tmp/bpffs/$name"
done
wait "$run"
sysctl -q kernel.bpf_stats_enabled="$stats"
for pin in "$tmp/bpffs"/on_*; do bpftool prog show pinned "$pin" --json; echo; done >"$tmp/progs.json"
python3 - "$tmp" <<'PY'
import json, sys
tmp = sys.argv[1]
r = json.load(open(f"{tmp}/run.json"))
n = sum(1 for s in r["samples"] if s["op"] == "fsync")
progs = [json.loads(l) for l in open(f"{tmp}/progs.json") if l.strip()]
total = sum(p.get("run_time_ns", 0) for p in progs)
runs = sum(p.get("run_cnt", 0) for p in progs)
print(f"programs' own time (bpf_stats, {n} fsyncs): {total / n / 1e3:.2f} us a fsync in {runs / n:.1f} program runs")
for p in sorted(progs, key=lambda p: -p.get("run_time_ns", 0)):
    if p.get("run_cnt"):
        print(f'  {p["name"]:36} {p["run_cnt"] / n:6.2f} runs a fsync {p["run_time_ns"] / p["run_cnt"]:6.0f} ns a run')
PY
