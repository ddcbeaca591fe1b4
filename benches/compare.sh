#!/usr/bin/env bash
# Side-by-side with fio, interleaved in one go (issue 2's performance check):
#  1. random writer: `fsynclab load random` against fio randwrite bs=4k psync (buffered),
#     on the same tmpfs directory: fsynclab's writes/s should be at least fio's.
#  2. prober alone: `fsynclab run overwrite-fsync --set background=none --set sleep=0`
#     against fio write bs=1m size=1m time_based fsync=1, on the same disk-backed directory:
#     median fsync latency within 5% of fio's.
# Usage: benches/compare.sh [DISK_DIR] [ROUNDS] [SECONDS]   (needs fio and jq)
set -euo pipefail
cd "$(dirname "$0")/.."
disk_dir=${1:-$PWD/target/bench-disk}
rounds=${2:-5}
secs=${3:-5}
command -v fio >/dev/null || { echo "fio is missing: apt-get install fio" >&2; exit 2; }
command -v jq >/dev/null || { echo "jq is missing: apt-get install jq" >&2; exit 2; }
cargo build --release --quiet
bin=$PWD/target/release/fsynclab

tmpfs=$(mktemp -d /dev/shm/fsynclab-bench-XXXXXX)
mkdir -p "$disk_dir"
disk=$(mktemp -d "$disk_dir/fsynclab-bench-XXXXXX")
trap 'rm -rf "$tmpfs" "$disk"' EXIT
trap 'exit 130' INT TERM

median() { sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }

echo "machine: $(uname -r), $(nproc) CPUs, $(awk '/MemTotal/ {printf "%.1f GiB", $2/1048576}' /proc/meminfo); fio $(fio --version); $($bin --version)"
echo "disk dir: $disk ($(df --output=fstype "$disk" | tail -1)), tmpfs dir: $tmpfs; $rounds rounds of $secs s each"

echo
echo "== 1. random 4 KiB buffered writes on tmpfs (writes/s) =="
echo "fsynclab: $bin load random --dir $tmpfs --set duration=${secs}s --set random_file_size=256M --format json"
echo "fio:      fio --name=rw --directory=$tmpfs --rw=randwrite --bs=4k --ioengine=psync --size=256m --time_based --runtime=$secs --output-format=json"
: >"$tmpfs/ours" ; : >"$tmpfs/fios"
for r in $(seq "$rounds"); do
  for who in $( ((r % 2)) && echo "ours fio" || echo "fio ours"); do
    if [ "$who" = ours ]; then
      v=$("$bin" load random --quiet --dir "$tmpfs" --set "duration=${secs}s" --set random_file_size=256M --format json | jq '.background.ops_per_s')
      echo "$v" >>"$tmpfs/ours"
    else
      v=$(fio --name=rw --directory="$tmpfs" --rw=randwrite --bs=4k --ioengine=psync --size=256m --time_based --runtime="$secs" --output-format=json | jq '.jobs[0].write.iops')
      rm -f "$tmpfs"/rw.*
      echo "$v" >>"$tmpfs/fios"
    fi
    printf 'round %d %-4s %12.0f writes/s\n' "$r" "$who" "$v"
  done
done
o=$(median <"$tmpfs/ours"); f=$(median <"$tmpfs/fios")
printf 'median: fsynclab %.0f writes/s, fio %.0f writes/s, ratio fsynclab/fio = %.3f\n' "$o" "$f" "$(echo "$o / $f" | bc -l)"

echo
echo "== 2. 1 MiB overwrite + fsync, nothing else running, on $disk (median fsync latency) =="
echo "fsynclab: $bin run overwrite-fsync --dir $disk --set background=none --set sleep=0 --set duration=${secs}s --format json"
echo "fio:      fio --name=fs --directory=$disk --rw=write --bs=1m --size=1m --time_based --runtime=$secs --fsync=1 --ioengine=psync --output-format=json"
: >"$tmpfs/ours" ; : >"$tmpfs/fios"
for r in $(seq "$rounds"); do
  for who in $( ((r % 2)) && echo "ours fio" || echo "fio ours"); do
    if [ "$who" = ours ]; then
      v=$("$bin" run overwrite-fsync --quiet --dir "$disk" --set background=none --set sleep=0 --set "duration=${secs}s" --format json | jq '.ops.fsync.latency_ns.p50')
      echo "$v" >>"$tmpfs/ours"
    else
      v=$(fio --name=fs --directory="$disk" --rw=write --bs=1m --size=1m --time_based --runtime="$secs" --fsync=1 --ioengine=psync --output-format=json | jq '.jobs[0].sync.lat_ns.percentile["50.000000"]')
      rm -f "$disk"/fs.*
      echo "$v" >>"$tmpfs/fios"
    fi
    printf 'round %d %-4s %12.1f us median fsync\n' "$r" "$who" "$(echo "$v / 1000" | bc -l)"
  done
done
o=$(median <"$tmpfs/ours"); f=$(median <"$tmpfs/fios")
printf 'median of medians: fsynclab %.1f us, fio %.1f us, ratio fsynclab/fio = %.3f\n' "$(echo "$o/1000" | bc -l)" "$(echo "$f/1000" | bc -l)" "$(echo "$o / $f" | bc -l)"

echo
echo "== 3. per-call timing overhead =="
cargo bench --quiet --bench clock_overhead 2>/dev/null | tail -2
