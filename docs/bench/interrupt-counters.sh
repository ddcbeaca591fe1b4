#!/bin/sh
# What counting interrupts costs the BPF tracer on a kernel without CONFIG_KALLSYMS_ALL
# (docs/explain.md, "Wakeups made in an interrupt"): `fsynclab watch --bpf-stats` of an
# overwrite + fdatasync loop beside two CPU burners, on the host's own filesystem, with the
# binary before the counters (OLD) and after (NEW), interleaved, ROUNDS rounds. Prints, per
# round and binary: the BPF programs' runs and run time per second (the kernel's statistics),
# and the loop's fdatasyncs per second.
#
#   docs/bench/interrupt-counters.sh OLD_BINARY NEW_BINARY [ROUNDS] [SECONDS]
#
# Needs root and python3. Takes /tmp/fsynclab-bench.lock; leaves nothing behind.
set -eu
old=${1:?the fsynclab binary before}
new=${2:?the fsynclab binary after}
rounds=${3:-3}
secs=${4:-10}
exec 9>/tmp/fsynclab-bench.lock
flock 9
work=$(mktemp -d /var/tmp/interrupt-counters.XXXXXX)
trap 'kill $b1 $b2 2>/dev/null || true; rm -rf "$work"' EXIT
trap 'exit 130' INT TERM
( while :; do :; done ) & b1=$!
( while :; do :; done ) & b2=$!
cat > "$work/loop.py" <<'PY'
import os, sys, time
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT)
os.write(fd, b'y' * (1 << 22)); os.fsync(fd)
end = time.time() + float(sys.argv[2]); n = 0
while time.time() < end:
    os.pwrite(fd, b'x' * 4096, (n * 7919 % 1024) * 4096); os.fdatasync(fd); n += 1
print(n / float(sys.argv[2]))
PY
r=1
while [ "$r" -le "$rounds" ]; do
  for arm in old new; do
    bin=$old; [ $arm = new ] && bin=$new
    rm -f "$work/store.sqlite"
    python3 "$work/loop.py" "$work/f" "$((secs + 2))" > "$work/rate" &
    loop=$!
    sleep 1
    "$bin" watch --comm python3 --threshold 1h --bpf-stats --duration "${secs}s" --store "$work/store.sqlite" > /dev/null 2>&1
    wait $loop
    "$bin" export 1 --format json --store "$work/store.sqlite" > "$work/run.json"
    python3 - "$work/run.json" "$secs" "$arm" "$r" "$(cat "$work/rate")" <<'PY'
import json, sys
r = json.load(open(sys.argv[1])); b = r["explain"]["bpf"]; s = float(sys.argv[2])
print(f"round {sys.argv[4]} {sys.argv[3]}: {b['program_runs']/s:,.0f} program runs/s, "
      f"{b['program_run_ns']/s/1e6:.3f} ms/s of BPF run time, {float(sys.argv[5]):.0f} fdatasyncs/s "
      f"(interrupts told by {b.get('interrupt_wakers_by', 'nothing')})")
PY
  done
  r=$((r + 1))
done
