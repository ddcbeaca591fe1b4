#!/usr/bin/env bash
# What each of the BPF tracer's programs costs a run of it (issue 25): the kernel's own
# count (kernel.bpf_stats_enabled=1, restored afterwards) of runs and run time of each
# program during one traced rndwr run, read with bpftool every 0.5 s while the run holds them all
#
# Usage (root, alone on the machine; run it for two builds in turn, several rounds):
#     docs/bench/bpf-program-time.sh BINARY [DIR] [SECONDS]
# DIR (default /var/tmp/tracer-cost) is where rndwr writes, removed afterwards if this
# script made it; SECONDS (default 12) its duration. Takes /tmp/fsynclab-bench.lock; leaves
# nothing behind. Prints rndwr's requests/s, then one line a program that ran: runs, ns a
# run, and its total time.
set -euo pipefail
bin=${1:?usage: docs/bench/bpf-program-time.sh BINARY [DIR] [SECONDS]}
dir=${2:-/var/tmp/tracer-cost}
secs=${3:-12}
exec 9>/tmp/fsynclab-bench.lock
flock 9
tmp=$(mktemp -d)
old=$(sysctl -n kernel.bpf_stats_enabled)
made=
[ -d "$dir" ] || made=$dir
trap 'sysctl -q kernel.bpf_stats_enabled="$old"; rm -rf "$tmp" ${made:+"$made"}' EXIT
trap 'exit 130' INT TERM
mkdir -p "$dir"
sysctl -q kernel.bpf_stats_enabled=1
"$bin" run rndwr --dir "$dir" --explain --tracer bpf \
  --set "duration=${secs}s" --no-store -q --format json -o "$tmp/run.json" >/dev/null &
run=$!
# The programs live only while the run does, and go one group after another as it ends:
# keep the last view that holds as many of them as any view did.
most=0
while kill -0 "$run" 2>/dev/null; do
  bpftool prog show --json >"$tmp/now.json"
  n=$(grep -c '"name":"on_' <(tr ',' '\n' <"$tmp/now.json") || true)
  if [ "$n" -gt 0 ] && [ "$n" -ge "$most" ]; then most=$n; mv "$tmp/now.json" "$tmp/progs.json"; fi
  sleep 0.5
done
wait "$run"
[ -s "$tmp/progs.json" ] || { echo "$0: the run's programs were never seen loaded" >&2; exit 1; }
python3 - "$tmp" <<'PY'
import json, sys
tmp = sys.argv[1]
r = json.load(open(f"{tmp}/run.json"))
print("requests/s", round(r["details"]["rndwr"]["summary"]["requests_per_s"], 1))
for p in json.load(open(f"{tmp}/progs.json")):
    if p.get("run_cnt") and p["name"].startswith("on_"):
        ns = p["run_time_ns"]
        print(f'{p["name"]:36} {p["run_cnt"]:>9} runs {ns / p["run_cnt"]:7.0f} ns/run {ns / 1e6:8.1f} ms')
PY
