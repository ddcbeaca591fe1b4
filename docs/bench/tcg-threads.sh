#!/usr/bin/env bash
# What running a TCG guest on one host thread costs (fsynclab's choice since multi-threaded
# TCG crashed or hung guests whose tracepoints were turned on and off: docs/kernels.md),
# against QEMU's default, multi-threaded TCG, interleaved round by round, in guests booting
# Debian's 6.1: pg_test_fsync's one-8 KiB-write fdatasync rate (one thread) on hdd-7200 and
# ssd-sata, and overwrite-fsync beside its stream (two threads) on hdd-7200, untraced.
# The "multi" arm puts a vng wrapper first on the PATH that drops fsynclab's
# `-accel tcg,thread=single`. As root, after scripts/setup.sh, from the repository:
#   docs/bench/tcg-threads.sh [ROUNDS]
set -uo pipefail
rounds=${1:-2}
bin=$(realpath "${FSYNCLAB:-target/release/fsynclab}")
pg=$(ls /usr/lib/postgresql/*/bin/pg_test_fsync | head -n 1)
k=$(ls /boot/vmlinuz-6.1.0-*-amd64 | sort -V | tail -n 1 | sed 's|/boot/vmlinuz-||')
vng=$(command -v vng)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
trap 'exit 130' INT TERM
mkdir "$work/multi"
cat > "$work/multi/vng" <<WRAP
#!/usr/bin/env bash
args=()
for a in "\$@"; do
  a="\${a/-accel tcg,thread=single /}"; a="\${a/--qemu-opts=-accel tcg,thread=single/}"
  [ -n "\$a" ] && args+=("\$a")
done
exec "$vng" "\${args[@]}"
WRAP
chmod +x "$work/multi/vng"
path() { if [ "$1" = multi ]; then echo "$work/multi:$PATH"; else echo "$PATH"; fi; }
rate() { awk '/one 8kB write/ {one=1} one && $1 == "fdatasync" {print $2; exit}' "$1"; }
for round in $(seq "$rounds"); do
  for profile in hdd-7200 ssd-sata; do
    for mode in single multi; do
      (cd "$work" && PATH=$(path $mode) flock /tmp/fsynclab-bench.lock "$bin" exec --kernel "$k" \
        --scratch ext4 --device "$profile" -- "$pg" -s 2 -f ./pg.out >"$work/out" 2>"$work/err") ||
        { echo "round $round pg $profile $mode: failed"; tail -n 3 "$work/err"; continue; }
      echo "round $round pg_test_fsync $profile $mode: $(rate "$work/out") fdatasyncs/s"
    done
  done
  for mode in single multi; do
    (cd "$work" && PATH=$(path $mode) flock /tmp/fsynclab-bench.lock /usr/bin/time -f "wall %e s" "$bin" \
      run overwrite-fsync --kernel "$k" --scratch ext4 --device hdd-7200 --set duration=10s \
      --no-explain --no-store --format json >"$work/run.json" 2>"$work/err") ||
      { echo "round $round overwrite-fsync $mode: failed"; tail -n 3 "$work/err"; continue; }
    echo "round $round overwrite-fsync $mode: $(python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))
f, b = r["ops"]["fsync"], r["background"]
print("%d fsyncs, p50 %.1f ms; stream %.1f MB/s;" % (f["count"], f["latency_ns"]["p50"] / 1e6, b["mb_per_s"]))
' "$work/run.json") $(tail -n 1 "$work/err")"
  done
done
