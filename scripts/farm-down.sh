#!/usr/bin/env bash
# Stops everything scripts/farm-up.sh DIR started and removes what it made under DIR: the
# cluster's jobs are cancelled, then slurmd, slurmctld and munged are stopped by their own pid
# files, and PostgreSQL by pg_ctl beside them; a last sweep ends any process still running from DIR. Safe to run on a
# farm that is half up, or down already. Touches nothing outside DIR.
set -uo pipefail
[ $# -eq 1 ] || { echo "usage: farm-down.sh DIR" >&2; exit 2; }
dir=$(realpath "$1" 2>/dev/null) || exit 0
[ -d "$dir" ] || exit 0

# Sends TERM to the processes of the pid files given, then KILL to those still running after
# 5 s. They are stopped together: one after another, each daemon's shutdown (about 2 s here)
# added up.
stop_pidfiles() {
  local f pid pids=() alive
  for f in "$@"; do
    pid=$(cat "$f" 2>/dev/null) || continue
    [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || continue
    kill -TERM "$pid" 2>/dev/null && pids+=("$pid")
  done
  for _ in $(seq 100); do
    alive=()
    for pid in "${pids[@]}"; do kill -0 "$pid" 2>/dev/null && alive+=("$pid"); done
    [ "${#alive[@]}" -eq 0 ] && return 0
    pids=("${alive[@]}")
    sleep 0.05
  done
  kill -KILL "${pids[@]}" 2>/dev/null
}

pg="$dir/pg"
pg_stop=
if [ -f "$pg/data/postmaster.pid" ]; then
  pgbin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
  # Beside the rest: the server needs none of them.
  (runuser -u postgres -- "$pgbin/pg_ctl" -D "$pg/data" -m immediate -w -t 20 stop >/dev/null 2>&1 \
    || kill -KILL "$(head -1 "$pg/data/postmaster.pid")" 2>/dev/null) &
  pg_stop=$!
fi

sl="$dir/slurm"
if [ -f "$sl/slurm.conf" ]; then
  export SLURM_CONF="$sl/slurm.conf"
  if [ -f "$sl/slurmctld.pid" ] && kill -0 "$(cat "$sl/slurmctld.pid")" 2>/dev/null; then
    jobs=$(timeout 10 squeue -h -o %A 2>/dev/null | sort -u)
    if [ -n "$jobs" ]; then
      # shellcheck disable=SC2086
      timeout 10 scancel $jobs 2>/dev/null
      for _ in $(seq 100); do
        [ -z "$(timeout 5 squeue -h -o %A 2>/dev/null)" ] && break
        sleep 0.1
      done
    fi
  fi
fi
stop_pidfiles "$sl"/slurmd-*.pid "$sl/slurmctld.pid" "$dir/munge/munged.pid"
[ -n "$pg_stop" ] && wait "$pg_stop"

# Anything still running from DIR (a job's step, a daemon whose pid file was lost).
for _ in 1 2 3; do
  left=$(pgrep -f -- "$dir/" || true)
  [ -z "$left" ] && break
  # shellcheck disable=SC2086
  kill -KILL $left 2>/dev/null
  sleep 0.2
done
rm -rf "$pg" "$dir/munge" "$sl" "$dir/farm.env"
exit 0
