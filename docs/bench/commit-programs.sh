#!/usr/bin/env bash
# What the journal commit's two programs (on_commit_start, on_commit_end) cost a run, for
# two builds of fsynclab side by side: for each round and each build, a whole-machine
# `watch --bpf-stats` around 10,000 appends of 4 KiB each followed by fsync (on ext4 every
# fsync commits a transaction), and the kernel's count of each program's runs and run time
# (bpftool, read before the watch ends). Prints one line per round and build, then per build
# the median ns a run of each program and of end over start (a ratio that the machine's
# speed of the moment mostly cancels from).
#
# Usage (root, after scripts/setup.sh), alone on the machine, on a scratch ext4 in RAM:
#     flock /work/bench.lock target/release/fsynclab exec --scratch ext4 --device ram \
#       --scratch-size 256M -- $PWD/docs/bench/commit-programs.sh OLD_FSYNCLAB NEW_FSYNCLAB [ROUNDS]
# The appends go to the working directory (exec's scratch filesystem).
set -euo pipefail
shopt -s inherit_errexit
for tool in bpftool python3 ps; do
  command -v "$tool" >/dev/null || { echo "commit-programs: $tool not found: run scripts/setup.sh" >&2; exit 1; }
done
old=$(realpath "${1:?usage: docs/bench/commit-programs.sh OLD_FSYNCLAB NEW_FSYNCLAB [ROUNDS]}")
new=$(realpath "${2:?usage: docs/bench/commit-programs.sh OLD_FSYNCLAB NEW_FSYNCLAB [ROUNDS]}")
rounds=${3:-6}
tmp=$(mktemp -d)
name=commit-programs
source "$(dirname "$0")/watch-tax/watch.sh"
cleanup() {
  stop_watch_at_exit
  rm -rf "$tmp" commit-programs.appended
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# The commit programs' runs and ns a run while build $1 watches the appends.
watched() {
  start_watch "$1" watch --no-store --bpf-stats --detail disk --duration 10m
  bpftool -j prog show >"$tmp/before.json"
  python3 - <<'PY'
import os
fd = os.open("commit-programs.appended", os.O_WRONLY | os.O_CREAT | os.O_APPEND)
for _ in range(10000):
    os.write(fd, b"x" * 4096)
    os.fsync(fd)
os.close(fd)
os.unlink("commit-programs.appended")
PY
  bpftool -j prog show >"$tmp/after.json"
  stop_watch
  python3 - "$tmp/before.json" "$tmp/after.json" <<'PY'
import json, sys
def programs(path):
    return {p["name"]: p for p in json.load(open(path)) if "run_cnt" in p}
before, after = programs(sys.argv[1]), programs(sys.argv[2])
out = []
for name in ["on_commit_start", "on_commit_end"]:
    a = after.get(name)
    b = before.get(name, {"run_cnt": 0, "run_time_ns": 0})
    if not a:
        sys.exit(f"commit-programs: no {name} loaded (not ext4, or another watch's programs?)")
    runs = a["run_cnt"] - b["run_cnt"]
    out += [str(runs), f"{(a['run_time_ns'] - b['run_time_ns']) / max(runs, 1):.0f}"]
print(" ".join(out))
PY
}

echo "round build start_runs start_ns end_runs end_ns" | tee "$tmp/lines"
for round in $(seq 1 "$rounds"); do
  for build in old new; do
    bin=$old
    [ "$build" = new ] && bin=$new
    echo "$round $build $(watched "$bin")" | tee -a "$tmp/lines"
  done
done
python3 - "$tmp/lines" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1]).read().splitlines()[1:]]
print("build start_ns_median end_ns_median end_over_start_median")
for build in ["old", "new"]:
    r = [x for x in rows if x[1] == build]
    start = [float(x[3]) for x in r]
    end = [float(x[5]) for x in r]
    ratio = [e / s for e, s in zip(end, start)]
    print(build, f"{statistics.median(start):.0f}", f"{statistics.median(end):.0f}",
          f"{statistics.median(ratio):.2f} ({min(ratio):.2f}-{max(ratio):.2f})")
PY
