#!/usr/bin/env bash
# Today's drive profiles against the published measurements they stand for (BENCHMARKS.md,
# "Today's drives"): each published benchmark's own command under `fsynclab exec`, on the
# scratch filesystem the source used, ROUNDS interleaved rounds (each round runs every
# profile in turn). Root; pg_test_fsync from Debian's postgresql, fio (scripts/setup-bench.sh).
#   docs/bench/today-profiles.sh [ROUNDS] > today-profiles.txt
set -euo pipefail
rounds=${1:-3}
fsynclab=${FSYNCLAB:-fsynclab}
pg_test_fsync=$(ls /usr/lib/postgresql/*/bin/pg_test_fsync | tail -1)
# The lines of pg_test_fsync's first table (one 8 kB write) whose method matches $1, and
# fsynclab's line on the device's activity.
one_write() {
  awk -v m="^ +$1 " '/using two 8kB/ {done = 1} !done && $0 ~ m {print} /exec: device/ {print}'
}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
trap 'exit 130' INT TERM
cd "$work"
for round in $(seq "$rounds"); do
  # Samsung 990 Pro on xfs: Tanel Poder's pg_test_fsync (5 s a test there; 2 s here).
  echo "== round $round nvme-consumer xfs pg_test_fsync"
  "$fsynclab" exec --scratch xfs --device nvme-consumer -- "$pg_test_fsync" -s 2 2>&1 \
    | one_write '(open_datasync|fdatasync|fsync)'
  # Apple M1: random 4 KiB writes with a flush each (Axboe: bound at 55-60 IOPS), and
  # pg_test_fsync's write + flush (55.117/s with F_FULLFSYNC on an M1 under macOS).
  echo "== round $round apple-m1 ext4 fio randwrite fdatasync=1"
  "$fsynclab" exec --scratch ext4 --device apple-m1 -- fio --name=m1 --rw=randwrite --bs=4k \
    --size=64m --fallocate=none --ioengine=sync --fdatasync=1 --runtime=10 --time_based --output-format=terse \
    --terse-version=3 2>&1 | awk -F';' 'NF > 50 {printf "  fio randwrite+fdatasync: %.1f IOPS\n", $49} /exec: device/'
  echo "== round $round apple-m1 ext4 pg_test_fsync"
  "$fsynclab" exec --scratch ext4 --device apple-m1 -- "$pg_test_fsync" -s 2 2>&1 \
    | one_write 'fdatasync'
  # Intel Optane DC P4800X on ext4: Percona's write + fsync loop (20000/s, 0.050 ms).
  echo "== round $round nvme-plp ext4 pg_test_fsync"
  "$fsynclab" exec --scratch ext4 --device nvme-plp -- "$pg_test_fsync" -s 2 2>&1 \
    | one_write '(fdatasync|fsync)'
  echo "== round $round cache=0 ext4 pg_test_fsync (the emulation's floor: a device that costs nothing)"
  "$fsynclab" exec --scratch ext4 --device cache=0 -- "$pg_test_fsync" -s 2 2>&1 \
    | one_write '(fdatasync|fsync)'
done
