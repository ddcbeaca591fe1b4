#!/usr/bin/env bash
# What a whole-machine `fsynclab watch` costs programs it does not watch, and one it does,
# beside the bpftrace equivalent (issue 61). Each round runs every side in turn, the order
# rotating and reversing from round to round; each side runs the four workloads once with
# its tracer attached the whole time (watch-tax/workloads.sh says what they are: dd,
# pingpong, fsync and irq; the 64 MiB file the reads read is made at the start and removed
# at the end):
# Sides (SIDES, space-separated): none; watch (`fsynclab watch --no-store`, every process,
# at its default detail: latency since 4 Dec 2026, disk before);
# watch:LEVEL (the same with --detail LEVEL); bpftrace, a minimal tracer on the same kind
# of hooks: the sync calls' entry and exit filtered to fsync and fdatasync into a latency
# histogram, and sched_switch timing their time off the CPU; at raw_syscalls
# (BPFTRACE_HOOKS=raw, the default) or with kfunc/kretfunc on __x64_sys_fsync and
# __x64_sys_fdatasync (BPFTRACE_HOOKS=kfunc, where the kernel allows fentry).
# Prints one line per side and workload and round (seconds), then per workload each side's
# median and the median of its per-round ratios to the round's untraced run.
#
# Usage (root; cc, bpftrace from scripts/setup-bench.sh):
#     docs/bench/watch-tax.sh FSYNCLAB [ROUNDS]
# On the host, alone (others' benchmarks take /work/bench.lock the same way), the fsyncs on
# a scratch ext4 on a loop device in RAM, the reads on the VM's disk:
#     flock /work/bench.lock target/release/fsynclab exec --scratch ext4 --device ram -- \
#       env IRQ_DIR=/var/tmp $PWD/docs/bench/watch-tax.sh $PWD/target/release/fsynclab 5
# In Debian's 6.1 under TCG, where fentry is allowed (sizes cut for its slow CPU; the reads
# on the scratch disk, a virtio disk the host serves):
#     flock /work/bench.lock target/release/fsynclab exec --kernel 6.1.0-57-amd64 \
#       --scratch ext4 --device ram --scratch-size 256M -- env BPFTRACE_HOOKS=kfunc \
#       DD_COUNT=100000 PINGPONG=5000 FSYNCS=300 IRQ_READS=2000 SETTLE=5 \
#       $PWD/docs/bench/watch-tax.sh $PWD/target/release/fsynclab 5
# FSYNC_DIR and IRQ_DIR default to the working directory (exec's scratch filesystem).
set -euo pipefail
bin=$(realpath "${1:?usage: docs/bench/watch-tax.sh FSYNCLAB [ROUNDS]}")
rounds=${2:-5}
here=$(cd "$(dirname "$0")" && pwd)
sides=(${SIDES:-none watch bpftrace})
settle=${SETTLE:-1}
tmp=$(mktemp -d)
name=watch-tax
source "$here/watch-tax/workloads.sh"
tracer=""
mounted=""
cleanup() {
  if [ -n "$tracer" ]; then kill -TERM "$tracer" 2>/dev/null || true; wait "$tracer" || true; fi
  if [ -n "$mounted" ] && mountpoint -q /sys/kernel/tracing; then umount /sys/kernel/tracing; fi
  rm -rf "$tmp" "${workload_files[@]}"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
# bpftrace finds the trace points in tracefs (fsynclab's BPF tracer does not need it),
# mounted before each of its starts: another program on the machine (a test of the tracefs
# tracer) may unmount it meanwhile.
ensure_tracefs() {
  if ! mountpoint -q /sys/kernel/tracing; then
    mount -t tracefs nodev /sys/kernel/tracing && mounted=1
  fi
}
ensure_tracefs
prepare_workloads

case ${BPFTRACE_HOOKS:-raw} in
  raw) enter='tracepoint:raw_syscalls:sys_enter /args->id == 74 || args->id == 75/'
       leave='tracepoint:raw_syscalls:sys_exit /@start[tid]/' ;;
  kfunc) enter='kfunc:__x64_sys_fsync, kfunc:__x64_sys_fdatasync'
         leave='kretfunc:__x64_sys_fsync, kretfunc:__x64_sys_fdatasync /@start[tid]/' ;;
  *) echo "watch-tax: BPFTRACE_HOOKS is raw or kfunc" >&2; exit 2 ;;
esac
bpftrace_program="$enter { @start[tid] = nsecs; }
$leave { @us = hist((nsecs - @start[tid]) / 1000); delete(@start[tid]); }
tracepoint:sched:sched_switch /@start[args->prev_pid]/ { @off[args->prev_pid] = nsecs; }
tracepoint:sched:sched_switch /@off[args->next_pid]/ {
  @off_us = hist((nsecs - @off[args->next_pid]) / 1000); delete(@off[args->next_pid]); }"

# A side's tracer started, and waited for until its hooks are attached.
start_tracer() {
  case $1 in
    none) return ;;
    watch) "$bin" watch --no-store >/dev/null 2>"$tmp/tracer.err" & ;;
    watch:*) "$bin" watch --no-store --detail "${1#watch:}" >/dev/null 2>"$tmp/tracer.err" & ;;
    bpftrace) ensure_tracefs; bpftrace -B line -e "$bpftrace_program" >"$tmp/tracer.err" 2>&1 & ;;
    *) echo "watch-tax: unknown side $1" >&2; exit 2 ;;
  esac
  tracer=$!
  until grep -qE '^(hooks:|Attaching)' "$tmp/tracer.err"; do
    kill -0 "$tracer" 2>/dev/null || { echo "watch-tax: $1 did not start:" >&2; cat "$tmp/tracer.err" >&2; exit 1; }
    sleep 0.1
  done
  # bpftrace says it is attaching before it has; watch says its hooks once attached.
  [ "$1" = bpftrace ] && sleep "$settle"
  grep -E '^hooks:' "$tmp/tracer.err" >&2 || true
}
# SIGTERM, not SIGINT: a background job of a script starts with SIGINT ignored, and
# fsynclab leaves an ignored signal alone (src/signals.rs); both tracers end on SIGTERM.
stop_tracer() {
  [ -n "$tracer" ] || return 0
  kill -TERM "$tracer"
  wait "$tracer" || true
  tracer=""
}

echo "round side workload seconds"
for r in $(seq 0 $((rounds - 1))); do
  n=${#sides[@]}
  order=()
  for i in $(seq 0 $((n - 1))); do order+=("${sides[$(((i + r) % n))]}"); done
  if [ $((r % 2)) = 1 ]; then
    rev=(); for ((i = n - 1; i >= 0; i--)); do rev+=("${order[$i]}"); done; order=("${rev[@]}")
  fi
  for side in "${order[@]}"; do
    start_tracer "$side"
    for w in dd pingpong fsync irq; do
      echo "$r $side $w $(seconds workload "$w")" | tee -a "$tmp/rounds"
    done
    stop_tracer
  done
done
python3 - "$tmp/rounds" "${sides[@]}" <<'PY'
import collections, statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
sides = sys.argv[2:]
t = collections.defaultdict(dict)
for r, side, work, s in rows:
    t[(work, side)][r] = float(s)
print("workload side median_s ratio_median ratios")
for work in ["dd", "pingpong", "fsync", "irq"]:
    base = t[(work, "none")] if "none" in sides else None
    for side in sides:
        got = t[(work, side)]
        ratios = sorted(got[r] / base[r] for r in got if base and r in base)
        print(work, side, f"{statistics.median(got.values()):.3f}",
              f"{statistics.median(ratios):.3f}" if ratios else "-",
              ",".join(f"{x:.3f}" for x in ratios))
PY
