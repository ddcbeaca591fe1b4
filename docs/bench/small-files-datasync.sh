#!/usr/bin/env bash
# Side-by-side checks of the `small-files` (iozone mode) and `datasync` scenarios against
# independent tools on the same directory. Each comparison is a series of PAIRS short
# trials, fsynclab then the other tool, back to back, so that a slow spell of a shared
# machine falls on both; compare medians and the median of the per-pair ratios.
#   - iozone -e -i 0 passes (write+fsync of a new file, rewrite+fsync of it) against fio jobs
#     that write N new files (unlink_each_loop) or rewrite one laid-out file N times, each
#     with fsync before close; fio's bw covers its whole loop (open, write, fsync, close);
#     gtod_reduce and scramble_buffers=0 keep fio's own per-write work out of the way.
#   - datasync's overwrite case against pg_test_fsync-like fio jobs (8 KiB write + sync over
#     a laid-out 8 MiB file), per method.
#   - datasync's mtime case against pg_test_fsync itself ("one 8kB write" at offset 0).
#   - the same iozone passes against dd (conv=fsync: dd's clock covers its writes and the
#     fsync, not open/close), per pass, medians (iozone-*-median tests).
# Prints one TSV line per trial:  test  pair  tool  figure   (KB/s for iozone-*, else ops/s)
# Usage: docs/bench/small-files-datasync.sh DIR [PAIRS]   (needs fio, dd and pg_test_fsync)
# SECTIONS="iozone dd overwrite mtime" (the default) chooses the comparisons to run.
set -euo pipefail
DIR=${1:?directory under test}
PAIRS=${2:-5}
FSYNCLAB=${FSYNCLAB:-target/release/fsynclab}
SECTIONS=${SECTIONS:-iozone dd overwrite mtime}
PG_TEST_FSYNC=${PG_TEST_FSYNC:-$(ls /usr/lib/postgresql/*/bin/pg_test_fsync | tail -1)}
W=$DIR/fsynclab-bench-$$
mkdir -p "$W"
trap 'rm -rf "$W"' EXIT
trap 'exit 130' INT TERM

py() { python3 -c "import json,sys; d=json.load(sys.stdin); print($1)"; }
out() { printf '%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4"; }

on() { [[ " $SECTIONS " == *" $1 "* ]]; }

# small-files iozone mode, one size at a time, N passes per trial.
on iozone && for spec in 64k:100 1M:30 8M:5; do
  size=${spec%:*}; n=${spec#*:}
  for pair in $(seq "$PAIRS"); do
    "$FSYNCLAB" run small-files --quiet --format json --dir "$W" \
      --set mode=iozone --set sizes="$size" --set runs="$n" > "$W/sf.json"
    for pass in write rewrite; do
      # Bytes over the summed pass times (write(s) + fsync), as fio's bw is bytes over time.
      kbs=$(py "round(d['ops']['iozone_$pass']['bytes']/1024/(d['ops']['iozone_$pass']['count']*d['ops']['iozone_$pass']['latency_ns']['mean']/1e9))" < "$W/sf.json")
      out "iozone-$pass-$size" "$pair" fsynclab "$kbs"
    done
    fio --name=write --directory="$W" --filename=iozone.tmp --rw=write --bs=4k --size="$size" \
      --ioengine=psync --fallocate=none --invalidate=0 --gtod_reduce=1 --scramble_buffers=0 --fsync_on_close=1 --unlink_each_loop=1 \
      --loops="$n" --output-format=json > "$W/fio.json"
    out "iozone-write-$size" "$pair" fio "$(py "d['jobs'][0]['write']['bw']" < "$W/fio.json")"
    fio --name=rewrite --directory="$W" --filename=iozone.tmp --rw=write --bs=4k --size="$size" \
      --ioengine=psync --fallocate=none --invalidate=0 --gtod_reduce=1 --scramble_buffers=0 --overwrite=1 --fsync_on_close=1 \
      --loops="$n" --output-format=json > "$W/fio.json"
    out "iozone-rewrite-$size" "$pair" fio "$(py "d['jobs'][0]['write']['bw']" < "$W/fio.json")"
    rm -f "$W/iozone.tmp"
  done
done

# The same passes against dd, pass by pass: medians of per-pass KB/s on both sides.
dd_kbs() { # prints KB/s of one dd pass from its last stderr line ("..., 0.00042 s, 156 MB/s")
  python3 -c "import sys; l=sys.stdin.read().strip().splitlines()[-1]; print(round($1/1024/float(l.split(', ')[-2].split()[0])))"
}
on dd && for spec in 64k:16:100 1M:256:30 8M:2048:5; do
  IFS=: read -r size blocks n <<< "$spec"
  bytes=$((blocks * 4096))
  for pair in $(seq "$PAIRS"); do
    "$FSYNCLAB" run small-files --quiet --format json --dir "$W" \
      --set mode=iozone --set sizes="$size" --set runs="$n" > "$W/sf.json"
    out "iozone-write-median-$size" "$pair" fsynclab "$(py "d['tables'][0]['rows'][0][4]" < "$W/sf.json")"
    out "iozone-rewrite-median-$size" "$pair" fsynclab "$(py "d['tables'][0]['rows'][0][5]" < "$W/sf.json")"
    : > "$W/dd-w.txt"; : > "$W/dd-r.txt"
    for _ in $(seq "$n"); do
      rm -f "$W/iozone.tmp"
      dd if=/dev/zero of="$W/iozone.tmp" bs=4k count="$blocks" conv=fsync 2>&1 | dd_kbs $bytes >> "$W/dd-w.txt"
      dd if=/dev/zero of="$W/iozone.tmp" bs=4k count="$blocks" conv=fsync,notrunc 2>&1 | dd_kbs $bytes >> "$W/dd-r.txt"
    done
    out "iozone-write-median-$size" "$pair" dd "$(sort -n "$W/dd-w.txt" | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}')"
    out "iozone-rewrite-median-$size" "$pair" dd "$(sort -n "$W/dd-r.txt" | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}')"
    rm -f "$W/iozone.tmp"
  done
done

# datasync overwrite case: 8 KiB write + sync walking an 8 MiB synced file, 1 s per trial.
on overwrite && for m in fsync fdatasync sync_file_range odsync; do
  case $m in
    fsync) opt=--fsync=1 ;;
    fdatasync) opt=--fdatasync=1 ;;
    sync_file_range) opt=--sync_file_range=wait_before,write,wait_after:1 ;;
    odsync) opt=--sync=dsync ;;
  esac
  for pair in $(seq "$PAIRS"); do
    "$FSYNCLAB" run datasync --quiet --format json --dir "$W" --set cases=overwrite --set methods=$m \
      --set rounds=1 --set duration=1s --set file_size=8M > "$W/ds.json"
    out "overwrite-$m" "$pair" fsynclab "$(py "d['tables'][0]['rows'][0][4]" < "$W/ds.json")"
    fio --name=$m --directory="$W" --filename=ds.dat --rw=write --bs=8k --size=8M --ioengine=psync \
      --overwrite=1 --invalidate=0 --time_based --runtime=1 $opt --output-format=json > "$W/fio.json"
    out "overwrite-$m" "$pair" fio "$(py "round(d['jobs'][0]['write']['iops'],1)" < "$W/fio.json")"
    rm -f "$W/ds.dat"
  done
done

# datasync mtime case (the same 8 KiB at offset 0) against pg_test_fsync's "one 8kB write".
on mtime && for pair in $(seq "$PAIRS"); do
  "$FSYNCLAB" run datasync --quiet --format json --dir "$W" --set cases=mtime --set methods=fdatasync,fsync \
    --set rounds=1 --set duration=1s > "$W/ds.json"
  python3 -c "
import json,sys
for row in json.load(open('$W/ds.json'))['tables'][0]['rows']:
    print('mtime-%s\t$pair\tfsynclab\t%s' % (row[1], row[4]))"
  "$PG_TEST_FSYNC" -f "$W/pg.tmp" -s 1 > "$W/pg.txt"
  awk -v p="$pair" '/one 8kB write/ {on=1} /two 8kB writes/ {on=0}
    on && ($1 == "fdatasync" || $1 == "fsync") && /ops\/sec/ { printf "mtime-%s\t%s\tpg_test_fsync\t%s\n", $1, p, $2 }' "$W/pg.txt"
done
exit 0
