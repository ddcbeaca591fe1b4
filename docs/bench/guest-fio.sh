#!/usr/bin/env bash
# fio's random 4 KiB read IOPS on an emulated disk, on the host and inside a `--kernel` guest
# (BENCHMARKS.md, "The emulated disk inside a --kernel guest"): ROUNDS interleaved rounds,
# each running every profile on the host and then in the guest. Root; fio from
# scripts/setup-bench.sh, a Debian 6.1 kernel from scripts/setup.sh.
#   docs/bench/guest-fio.sh [ROUNDS] [KERNEL] > guest-fio.txt
set -euo pipefail
rounds=${1:-2}
kernel=${2:-$(ls /boot | sed -n 's/^vmlinuz-\(6\.1\.0-[0-9]*-amd64\)$/\1/p' | sort -V | tail -1)}
fsynclab=${FSYNCLAB:-fsynclab}
# One job: 4 KiB O_DIRECT random reads of a 64 MiB file, one at a time, 5 s; its IOPS.
job='fio --name=r --filename="$FSYNCLAB_DIR/f" --size=64m --rw=randread --bs=4k --direct=1 --ioengine=psync --runtime=5 --time_based --output-format=terse --terse-version=3'
iops() { awk -F';' 'NF > 50 {printf "%.1f\n", $8}'; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
trap 'exit 130' INT TERM
cd "$work"
echo "profile round host_iops guest_iops kernel"
for round in $(seq "$rounds"); do
  for profile in hdd-7200 ssd-sata; do
    host=$("$fsynclab" exec --scratch ext4 --device "$profile" -- sh -c "$job" 2>/dev/null | iops)
    guest=$("$fsynclab" exec --kernel "$kernel" --scratch ext4 --device "$profile" -- sh -c "$job" 2>/dev/null | iops)
    echo "$profile $round $host $guest $kernel"
  done
done
