#!/usr/bin/env bash
# How much of an unwatched program's time a whole-machine `fsynclab watch` spends in its BPF
# programs (issue 61), read from the kernel's own count rather than from wall time: in a TCG
# guest, whose virtual CPUs share one host thread, single rounds of watch-tax.sh move by 2x,
# while the programs' run time (kernel.bpf_stats_enabled, which `watch --bpf-stats` turns on
# and restores) is counted in the guest's own clock whatever else the host does.
# For each round and each workload of watch-tax.sh (dd, pingpong, fsync, irq): the workload
# alone (its seconds); then a watch --bpf-stats [--detail LEVEL] around it alone (the
# programs' runs and CPU time); then the same watch around `sleep` for as long (the
# machine's own runs, idle: timers, daemons). Prints one line per round and workload, then
# per workload the medians and the programs' share of the workload's time, two ways:
#     share        (program time during it - program time idle) / the workload's seconds alone
#     same_window  P / (the watched workload's seconds - P), where P is the program time during
#                  it less the idle programs' rate over as long: both counted in the watched
#                  window's own seconds, so that a guest whose speed moves between windows
#                  (TCG on a busy host) does not move it,
# and the programs that took most of it (bpftool's run_time_ns of each, read before the
# watch ends: the median over rounds of each program's microseconds).
# That is the direct cost (the CPU the programs take, on whichever CPU); it leaves out the
# cost of entering them and their cache misses, which watch-tax.sh's wall times include.
#
# Usage (root, after scripts/setup.sh and scripts/setup-bench.sh), alone on the machine:
#     docs/bench/watch-program-share.sh FSYNCLAB [ROUNDS]
# In Debian's 6.1 under TCG, where fentry is allowed:
#     flock /work/bench.lock target/release/fsynclab exec --kernel 6.1.0-57-amd64 \
#       --scratch ext4 --device ram --scratch-size 256M -- env DD_COUNT=400000 \
#       PINGPONG=20000 FSYNCS=1000 IRQ_READS=4000 \
#       $PWD/docs/bench/watch-program-share.sh $PWD/target/release/fsynclab 5
# DETAIL=LEVEL watches with --detail LEVEL (default: watch's own, for this
# whole-machine watch latency since 4 Dec 2026, disk before); WATCH_ARGS adds
# more of watch's options (--stack-over 1s); WORKLOADS picks some of the four ("fsync").
# FSYNC_DIR and IRQ_DIR default to the working directory (exec's scratch filesystem).
set -euo pipefail
shopt -s inherit_errexit
for tool in bpftool cc bc python3 ps; do
  command -v "$tool" >/dev/null || { echo "watch-program-share: $tool not found: run scripts/setup.sh and scripts/setup-bench.sh" >&2; exit 1; }
done
bin=$(realpath "${1:?usage: docs/bench/watch-program-share.sh FSYNCLAB [ROUNDS]}")
rounds=${2:-5}
here=$(cd "$(dirname "$0")" && pwd)
detail=(${DETAIL:+--detail "$DETAIL"} ${WATCH_ARGS:-})
workloads=(${WORKLOADS:-dd pingpong fsync irq})
tmp=$(mktemp -d)
name=watch-program-share
source "$here/watch-tax/workloads.sh"
source "$here/watch-tax/watch.sh"
cleanup() {
  stop_watch_at_exit
  rm -rf "$tmp" "${workload_files[@]}"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
prepare_workloads "${workloads[@]}"

# Runs "$@" inside a watch --bpf-stats; prints the programs' runs, their CPU time in us, and
# the seconds "$@" took inside the watch.
watched() {
  local took
  start_watch "$bin" watch --no-store --bpf-stats "${detail[@]}"
  [ -s "$tmp/hooks" ] || grep '^hooks:' "$tmp/watch.out" | tee "$tmp/hooks" >&2
  took=$(seconds "$@")
  bpftool -j prog show >"$tmp/programs.json"
  stop_watch
  # "the BPF programs ran 803992 times for 55.038ms of CPU in all (...)"
  python3 - "$tmp/watch.out" "$took" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
m = re.search(r"the BPF programs ran (\d+) times for ([\d.]+)(ns|us|ms|s) of CPU", text)
if not m:
    sys.exit("watch-program-share: no program statistics in the watch's output:\n" + text)
scale = {"ns": 1e-3, "us": 1, "ms": 1e3, "s": 1e6}[m.group(3)]
print(m.group(1), f"{float(m.group(2)) * scale:.1f}", sys.argv[2])
PY
}

echo "round workload seconds runs program_us watched_seconds idle_runs idle_program_us idle_seconds"
for r in $(seq 0 $((rounds - 1))); do
  for w in "${workloads[@]}"; do
    s=$(seconds workload "$w")
    busy=$(watched workload "$w")
    python3 - "$tmp/programs.json" "$r" "$w" >>"$tmp/by-program" <<'PY'
import json, sys
for p in json.load(open(sys.argv[1])):
    if p.get("run_time_ns"):
        print(sys.argv[2], sys.argv[3], p.get("name", p["id"]), p["run_cnt"], p["run_time_ns"])
PY
    idle=$(watched sleep "$s")
    echo "$r $w $s $busy $idle" | tee -a "$tmp/rounds"
  done
done
python3 - "$tmp/rounds" <<'PY'
import collections, statistics, sys
rows = collections.defaultdict(list)
for line in open(sys.argv[1]):
    r, w, s, runs, us, ws, idle_runs, idle_us, idle_s = line.split()
    rows[w].append((float(s), int(runs), float(us), float(ws), float(idle_us), float(idle_s)))
def pct(xs):
    xs = sorted(xs)
    return f"{100 * statistics.median(xs):.3f}%", ",".join(f"{100 * x:.3f}%" for x in xs)
# share: the program time over the workload's seconds alone, in another window: a guest whose
# speed moves between windows moves it. same_window: the program time over the rest of the
# watched window's own seconds, the idle programs' rate taken off for as long: the guest's
# speed cancels, as both are counted in the same seconds.
print("workload seconds_median runs_median program_us_median idle_us_median share_median shares same_window_median same_windows")
for w, got in rows.items():
    shares = [(us - idle_us) / (s * 1e6) for s, _, us, _, idle_us, _ in got]
    own = []
    for _, _, us, ws, idle_us, idle_s in got:
        p = us - idle_us * ws / idle_s
        own.append(p / (ws * 1e6 - p))
    print(w, f"{statistics.median(g[0] for g in got):.3f}", int(statistics.median(g[1] for g in got)),
          f"{statistics.median(g[2] for g in got):.1f}", f"{statistics.median(g[4] for g in got):.1f}",
          *pct(shares), *pct(own))
PY
python3 - "$tmp/by-program" <<'PY'
import collections, statistics, sys
runs, ns = collections.defaultdict(list), collections.defaultdict(list)
for line in open(sys.argv[1]):
    r, w, name, cnt, t = line.split()
    runs[(w, name)].append(int(cnt))
    ns[(w, name)].append(int(t))
print("workload program runs_median program_us_median ns_a_run")
for w in ["dd", "pingpong", "fsync", "irq"]:
    top = sorted((statistics.median(t), name) for (ww, name), t in ns.items() if ww == w)[::-1][:8]
    for us, name in top:
        n = statistics.median(runs[(w, name)])
        print(w, name, int(n), f"{us / 1e3:.1f}", f"{us / max(n, 1):.0f}")
PY
