#!/usr/bin/env bash
# Stops everything scripts/farm-up.sh DIR started and removes what it made under DIR: the
# cluster's jobs are cancelled, then slurmd, slurmctld, munged and PostgreSQL are stopped by
# their own pid files; a last sweep ends any process still running from DIR. Safe to run on a
# farm that is half up, or down already. Touches nothing outside DIR.
set -uo pipefail
[ $# -eq 1 ] || { echo "usage: farm-down.sh DIR" >&2; exit 2; }
dir=$(realpath "$1" 2>/dev/null) || exit 0
[ -d "$dir" ] || exit 0

# Sends TERM to the process of pid file $1, then KILL if it has not gone after 5 s.
stop_pidfile() {
  local pid
  pid=$(cat "$1" 2>/dev/null) || return 0
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || return 0
  kill -TERM "$pid" 2>/dev/null
  for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.1; done
  kill -KILL "$pid" 2>/dev/null
}

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
  for pidfile in "$sl"/slurmd-*.pid; do [ -e "$pidfile" ] && stop_pidfile "$pidfile"; done
  stop_pidfile "$sl/slurmctld.pid"
fi
stop_pidfile "$dir/munge/munged.pid"

pg="$dir/pg"
if [ -f "$pg/data/postmaster.pid" ]; then
  pgbin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
  runuser -u postgres -- "$pgbin/pg_ctl" -D "$pg/data" -m immediate -w -t 20 stop >/dev/null 2>&1 \
    || kill -KILL "$(head -1 "$pg/data/postmaster.pid")" 2>/dev/null
fi

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
