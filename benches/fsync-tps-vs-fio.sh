#!/usr/bin/env bash
# fsync-tps `coordination=none threads=1` against fio, interleaved, on the same directory.
# Usage: benches/fsync-tps-vs-fio.sh DIR fdatasync|fsync [ROUNDS] [SECONDS]
# Prints one line per round: fio's write IOPS (each write followed by the sync call, so
# IOPS = transactions/s), fsynclab's tps, and their ratio. See docs/bench/fsync-tps-rndwr.md.
set -euo pipefail
D=$1
SYNC=$2
ROUNDS=${3:-15}
T=${4:-2}
F=${FSYNCLAB:-target/release/fsynclab}
for round in $(seq 1 "$ROUNDS"); do
  # fio's file is laid out once and kept: from the second round on, pure overwrite of synced
  # blocks, as fsynclab's prepared (and fsynced) file is.
  fio --name=tps --directory="$D" --rw=write --bs=4k --size=16M --overwrite=1 --"$SYNC"=1 \
    --ioengine=sync --time_based --runtime="$T" --output-format=json >/tmp/fsynclab-bench-fio.json
  fio_iops=$(python3 -c "import json;print('%.1f'%json.load(open('/tmp/fsynclab-bench-fio.json'))['jobs'][0]['write']['iops'])")
  "$F" run fsync-tps --dir "$D" --quiet --format json --set threads=1 --set coordination=none \
    --set sync="$SYNC" --set duration="${T}s" --set file_size=16M >/tmp/fsynclab-bench-fl.json
  fl_tps=$(python3 -c "import json;r=json.load(open('/tmp/fsynclab-bench-fl.json'));print('%.1f'%r['tables'][0]['rows'][0][2])")
  echo "round $round $SYNC fio_iops=$fio_iops fsynclab_tps=$fl_tps ratio=$(python3 -c "print('%.3f'%($fl_tps/$fio_iops))")"
done
rm -f "$D/tps.0.0" /tmp/fsynclab-bench-fio.json /tmp/fsynclab-bench-fl.json
