#!/usr/bin/env bash
# Does `fsynclab watch --detail latency` split a call as the scheduler's hooks do (issue
# 61)? Without the scheduler's hooks it reads three of the task's scheduler counters at a
# call's entry and exit (se.prev_sum_exec_runtime, sched_info.last_arrival,
# sched_info.run_delay). This reads the same counters independently, with bpftrace at the
# fsync system call's trace points, beside a watch at each level, on the same calls:
#   latency  the watch's counters against bpftrace's: the same method twice, so the two
#            should agree call by call up to where each one's hooks sit;
#   sleeps   the watch's split from its scheduler hooks against bpftrace's counters: two
#            methods on the same calls.
# Each level: N fsyncs of 4 KiB on a quiet machine, then N with a `yes` on every CPU (so the
# calls wait for a CPU too). Prints per level and phase the sums of the calls' latency, time
# on a CPU and waiting for one, each side, and per call the differences (bpftrace - watch):
# median, p10 and p90. The calls are matched in order (one thread makes them, the watch
# prints every call: --threshold 0).
#
# Usage (root, bpftrace installed: scripts/setup-bench.sh), alone on the machine:
#     docs/bench/counter-split.sh FSYNCLAB [FSYNCS] [DIR]
# FSYNCS defaults to 300, DIR (where the file synced is) to the working directory. Mounts
# tracefs at /sys/kernel/tracing if it is not (bpftrace's trace points need it) and unmounts
# it again; leaves nothing behind, Ctrl-C included.
set -euo pipefail
for tool in bpftrace python3 yes; do
  command -v "$tool" >/dev/null || { echo "counter-split: $tool not found: run scripts/setup-bench.sh" >&2; exit 1; }
done
bin=$(realpath "${1:?usage: docs/bench/counter-split.sh FSYNCLAB [FSYNCS] [DIR]}")
fsyncs=${2:-300}
dir=$(realpath "${3:-.}")
name=csplit$$
tmp=$(mktemp -d)
mounted=""
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  [ -n "$mounted" ] && umount /sys/kernel/tracing
  rm -rf "$tmp" "$dir/$name.f"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
if [ ! -d /sys/kernel/tracing/events/syscalls ]; then
  mount -t tracefs nodev /sys/kernel/tracing
  mounted=1
fi

cat >"$tmp/counters.bt" <<EOF
tracepoint:syscalls:sys_enter_fsync /comm == "$name"/ {
  @t[tid] = nsecs;
  @b[tid] = (int64)curtask->se.prev_sum_exec_runtime - (int64)curtask->sched_info.last_arrival;
  @d[tid] = (int64)curtask->sched_info.run_delay;
}
tracepoint:syscalls:sys_exit_fsync /@t[tid]/ {
  \$took = (int64)(nsecs - @t[tid]);
  \$on = (int64)curtask->se.prev_sum_exec_runtime - (int64)curtask->sched_info.last_arrival - @b[tid] + \$took;
  printf("C %d %d %d\n", \$took, \$on, (int64)curtask->sched_info.run_delay - @d[tid]);
  delete(@t[tid]); delete(@b[tid]); delete(@d[tid]);
}
EOF
cat >"$tmp/fsyncs.py" <<EOF
import ctypes, os, sys
ctypes.CDLL(None).prctl(15, b"$name", 0, 0, 0)
fd = os.open("$dir/$name.f", os.O_CREAT | os.O_WRONLY)
for _ in range(int(sys.argv[1])):
    os.pwrite(fd, b"x" * 4096, 0)
    os.fsync(fd)
os.close(fd)
EOF
# Waits until FILE has a line matching PATTERN (at most 60 s).
wait_for() {
  for _ in $(seq 600); do grep -q "$2" "$1" 2>/dev/null && return 0; sleep 0.1; done
  echo "counter-split: no '$2' in $1 after 60 s:" >&2; cat "$1" >&2; exit 1
}

for detail in latency sleeps; do
  bpftrace "$tmp/counters.bt" >"$tmp/bt-$detail" 2>&1 &
  pids+=($!)
  wait_for "$tmp/bt-$detail" Attaching
  "$bin" watch --detail "$detail" --threshold 0 --comm "$name" --no-store >"$tmp/w-$detail" 2>"$tmp/we-$detail" &
  pids+=($!)
  wait_for "$tmp/we-$detail" '^hooks: '
  python3 "$tmp/fsyncs.py" "$fsyncs"
  burners=()
  for _ in $(seq "$(nproc)"); do yes >/dev/null & burners+=($!); done
  python3 "$tmp/fsyncs.py" "$fsyncs"
  kill "${burners[@]}"
  wait "${burners[@]}" 2>/dev/null || true
  sleep 1
  # SIGTERM: a background job of a script starts with SIGINT ignored.
  for p in "${pids[@]}"; do kill -TERM "$p"; wait "$p" || true; done
  pids=()
done

python3 - "$tmp" "$fsyncs" <<'EOF'
import re, statistics as st, sys
tmp, n = sys.argv[1], int(sys.argv[2])
unit = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1}
def secs(t):
    m = re.match(r"([0-9.]+)(ns|us|ms|s)$", t)
    return float(m.group(1)) * unit[m.group(2)]
for detail in ("latency", "sleeps"):
    bt = [tuple(int(x) / 1e9 for x in l.split()[1:]) for l in open(f"{tmp}/bt-{detail}") if l.startswith("C ")]
    watch = []
    for line in open(f"{tmp}/w-{detail}"):
        m = re.search(r" fsync\(fd [^)]*\) ([0-9.]+(?:ns|us|ms|s)): (.*?)(?: \| |$)", line)
        if not m:
            continue
        on = wait = 0.0
        for part in m.group(2).split("; "):
            pm = re.match(r"([0-9.]+(?:ns|us|ms|s)) (.*)", part)
            if pm and pm.group(2).startswith("on CPU"):
                on += secs(pm.group(1))
            elif pm and pm.group(2).startswith("waiting for a CPU"):
                wait += secs(pm.group(1))
        watch.append((secs(m.group(1)), on, wait))
    if len(bt) != 2 * n or len(watch) != 2 * n:
        sys.exit(f"counter-split: {detail}: bpftrace saw {len(bt)} calls, the watch printed {len(watch)}; expected {2 * n}")
    print(f"--detail {detail}: bpftrace's counters against the watch's split, {n} fsyncs a phase")
    for phase, part in (("quiet", slice(0, n)), ("busy", slice(n, 2 * n))):
        b, w = bt[part], watch[part]
        lat_b, lat_w = sum(x[0] for x in b), sum(x[0] for x in w)
        print(f"  {phase}: latency {1e3 * lat_b:.1f} ms (bpftrace), {1e3 * lat_w:.1f} ms (watch); "
              f"on a CPU {100 * sum(min(max(x[1], 0), x[0]) for x in b) / lat_b:.1f}% / {100 * sum(x[1] for x in w) / lat_w:.1f}%; "
              f"waiting for one {100 * sum(x[2] for x in b) / lat_b:.1f}% / {100 * sum(x[2] for x in w) / lat_w:.1f}%")
        for what, i in (("latency", 0), ("on a CPU", 1), ("waiting for a CPU", 2)):
            d = [1e6 * (x[i] - y[i]) for x, y in zip(b, w)]
            q = st.quantiles(d, n=10)
            print(f"    {what}, bpftrace - watch, a call: median {st.median(d):.1f} us (p10 {q[0]:.1f}, p90 {q[-1]:.1f})")
EOF
