#!/usr/bin/env bash
# Fidelity of the emulated disks (docs/disk-model.md): each job of docs/bench/disk-model.fio
# through its own `fsynclab exec` on a scratch ext4 over each profile, as root, one at a
# time. Prints one TSV line per profile and job:
#   profile  job  figure  unit  [what the daemon counted]
#   seq-1m: MB/s; rand-4k: IOPS; flush-after-256-random: fdatasync mean and p99 in ms, with
#   the mean number of 4 KiB blocks each flush found waiting in the write cache (from
#   `fsynclab exec --output`: environment.device_profile.activity).
# Usage: docs/bench/disk-model.sh [PROFILE...]   (default: every named profile and the
#        daemon's floor, cache=64M: a disk with no media cost). Needs fio.
set -euo pipefail
cd "$(dirname "$0")/../.."
FSYNCLAB=${FSYNCLAB:-target/release/fsynclab}
BACKING=${BACKING:-/tmp}
JOB=$PWD/docs/bench/disk-model.fio
PROFILES=("$@")
[ ${#PROFILES[@]} -gt 0 ] || PROFILES=(hdd-5400 hdd-7200 ssd-sata nvme san cache=64M)
out=$(mktemp)
trap 'rm -f "$out" "$out.fio" "$out.json"' EXIT
trap 'exit 130' INT TERM
for p in "${PROFILES[@]}"; do
  for job in seq-1m flush-after-256-random rand-4k; do
    "$FSYNCLAB" exec --scratch ext4 --scratch-size 2G --device "$p" --backing "$BACKING" \
      --output "$out.json" -- fio --output-format=json --output="$out.fio" --section="$job" "$JOB" >&2
    python3 - "$p" "$job" "$out.fio" "$out.json" <<'PY'
import json, sys
profile, job, path, record = sys.argv[1:]
j = json.load(open(path))["jobs"][0]
a = json.load(open(record))["environment"]["device_profile"]["activity"]
if job == "seq-1m":
    print(f"{profile}\t{job}\t{j['write']['bw_bytes'] / 1e6:.1f}\tMB/s")
elif job == "rand-4k":
    print(f"{profile}\t{job}\t{j['write']['iops']:.0f}\tIOPS\tseeks {a['seeks']}, skips {a['short_skips']}, media busy {a['media_busy_fraction']:.2f}")
else:
    s = j["sync"]["lat_ns"]
    pending = a["flush_pending_bytes_total"] / max(a["flushes"], 1) / 4096
    print(f"{profile}\t{job}\t{s['mean'] / 1e6:.2f}\tms mean, p99 {s['percentile']['99.000000'] / 1e6:.2f} ms ({s['N']} fdatasyncs)"
          f"\tdaemon: {a['flushes']} flushes, {pending:.0f} blocks waiting on average, {a['flush_ms_mean']:.2f} ms mean")
PY
  done
done
