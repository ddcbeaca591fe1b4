#!/usr/bin/env bash
# rndwr against sysbench 1.0 fileio rndwr with the same parameters, interleaved, on the same
# directory. Usage: benches/rndwr-vs-sysbench.sh DIR [THREADS] [ROUNDS]
# Compares sysbench's writes/s with fsynclab's requests/s (both: writes / total time).
# See docs/bench/fsync-tps-rndwr.md for why --events is not used (sysbench 1.0 counts syncs
# as events; 0.4's --max-requests counted writes only).
set -euo pipefail
D=$1
T=${2:-16}
ROUNDS=${3:-7}
F=${FSYNCLAB:-$(pwd)/target/release/fsynclab}
SB="sysbench fileio --file-num=128 --file-total-size=256M --file-block-size=16384 --file-test-mode=rndwr
    --file-fsync-freq=100 --file-fsync-mode=fdatasync --file-fsync-end=on --threads=$T --time=10 --events=0"
cd "$D"
$SB prepare >/dev/null
for round in $(seq 1 "$ROUNDS"); do
  $SB run >/tmp/fsynclab-bench-sb.txt
  sb_w=$(awk '/writes\/s:/ {print $2}' /tmp/fsynclab-bench-sb.txt)
  sb_f=$(awk '/fsyncs\/s:/ {print $2}' /tmp/fsynclab-bench-sb.txt)
  sb_t=$(awk '/total time:/ {print $3}' /tmp/fsynclab-bench-sb.txt)
  "$F" run rndwr --dir "$D" --quiet --format json --set files=128 --set total_size=256M --set threads="$T" \
    --set duration=10s >/tmp/fsynclab-bench-rw.json
  read -r fl_w fl_f fl_t <<<"$(python3 -c "
import json;r=json.load(open('/tmp/fsynclab-bench-rw.json'));row=r['tables'][0]['rows'][0]
print('%.2f %.2f %.2f'%(row[0], row[3]/row[4], row[4]))")"
  echo "round $round threads=$T sysbench writes/s=$sb_w fsyncs/s=$sb_f time=$sb_t | fsynclab requests/s=$fl_w syncs/s=$fl_f time=$fl_t | ratio=$(python3 -c "print('%.3f'%($fl_w/$sb_w))")"
done
$SB cleanup >/dev/null
rm -f /tmp/fsynclab-bench-sb.txt /tmp/fsynclab-bench-rw.json
