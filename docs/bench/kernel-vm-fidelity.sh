#!/usr/bin/env bash
# The emulated disk's fidelity inside a --kernel guest: pg_test_fsync's one-8 KiB-write
# fdatasync rate on a scratch ext4, on the host's kernel and inside a guest booting a Debian
# 6.1 kernel (TCG where KVM does not work), interleaved round by round, for each profile.
# As root, after scripts/setup.sh, from the repository: docs/bench/kernel-vm-fidelity.sh [ROUNDS]
# Prints one line per run: round, profile, where, fdatasync ops/s.
set -euo pipefail
rounds=${1:-3}
bin=$(realpath "${FSYNCLAB:-target/release/fsynclab}")
pg=$(ls /usr/lib/postgresql/*/bin/pg_test_fsync | head -n 1)
kernel=$(ls /boot/vmlinuz-6.1.0-*-amd64 | sort -V | tail -n 1 | sed 's|/boot/vmlinuz-||')
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
trap 'exit 130' INT TERM
rate() { awk '/one 8kB write/ {one=1} one && $1 == "fdatasync" {print $2; exit}' "$1"; }
for round in $(seq "$rounds"); do
  for profile in hdd-7200 ssd-sata; do
    for where in host "$kernel"; do
      (cd "$work" && flock /tmp/fsynclab-bench.lock "$bin" exec --kernel "$where" --scratch ext4 \
        --device "$profile" -- "$pg" -s 3 -f ./pg_test_fsync.out >"$work/out" 2>"$work/err") || {
        echo "round $round $profile $where: failed"; tail -n 3 "$work/err"; continue; }
      echo "round $round $profile $where $(rate "$work/out")"
    done
  done
done
