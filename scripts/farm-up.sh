#!/usr/bin/env bash
# Brings up a throwaway testing farm on this machine, without systemd and without touching any
# PostgreSQL, MUNGE or Slurm already here: every daemon has its own port, socket, data, spool,
# pid and log files under DIR, and scripts/farm-down.sh DIR stops them all and removes them.
#
#   scripts/farm-up.sh DIR [--postgres] [--slurm NODES]
#
# --postgres  a PostgreSQL server (Debian's postgresql package) on 127.0.0.1 and a free port,
#             with a role and a database `fsynclab` (the role may create more databases)
# --slurm N   MUNGE on its own socket and key, slurmctld, and N slurmd (nodes n1..nN, all on
#             this machine: `slurmd -N nK` on its own port, %n in the spool, pid and log
#             settings) in one partition `farm`; jobs run as the submitting user, here root
#
# Prints, and writes to DIR/farm.env, what a client needs: SLURM_CONF, FARM_STORE (the
# database's address, its password in it), FARM_PARTITION. Runs as root. On any failure it
# tears down what it made and exits non-zero with the daemon's log.
set -euo pipefail

die() { echo "farm-up: $*" >&2; exit 1; }
[ $# -ge 1 ] || die "usage: farm-up.sh DIR [--postgres] [--slurm NODES]"
dir=$(realpath "$1"); shift
want_pg=0; nodes=0
while [ $# -gt 0 ]; do
  case "$1" in
    --postgres) want_pg=1 ;;
    --slurm) nodes=${2:?--slurm takes a node count}; shift ;;
    *) die "unknown option $1" ;;
  esac
  shift
done
[ "$(id -u)" -eq 0 ] || die "needs root (daemons run as the postgres and munge users)"
[ -d "$dir" ] || die "$dir is not a directory"
here=$(dirname "$(realpath "$0")")
trap 'status=$?; if [ $status -ne 0 ]; then "$here/farm-down.sh" "$dir" >&2 || true; fi' EXIT
trap 'exit 130' INT TERM

# The daemons' users must reach their directories under DIR.
chmod 711 "$dir"
env_file="$dir/farm.env"
: >"$env_file"

# A TCP port on 127.0.0.1 that no socket holds, below the kernel's ephemeral range: a port in
# that range can be taken at any moment as the local end of an outgoing connection (by the
# database's clients, or the controller's pings), and a daemon told to listen there then fails
# with "Address already in use".
free_port() {
  local p low
  low=$(cut -f1 /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || echo 32768)
  [ "$low" -gt 11000 ] || low=32768
  for _ in $(seq 200); do
    p=$((10000 + RANDOM % (low - 10000)))
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null && ! grep -qs ":$p\b" "$env_file" \
      && ! { command -v ss >/dev/null && [ -n "$(ss -Htan "sport = :$p")" ]; }; then
      echo "$p"; return 0
    fi
  done
  die "no free port found"
}

# Another farm coming up at the same moment (two farm tests at a time, a second fsynclab) must
# not pick a port this one picked and has not bound yet: who picks ports holds a machine-wide
# lock until its daemons listen on them (flock(1) on fsynclab's lock file for it, as
# src/testbed/machine_lock.rs makes them; the kernel drops it if this script dies). The
# daemons are started with fd 9 closed, or they would hold the lock for their whole life.
ports_lock=/run/lock/fsynclab-farm-ports.lock
[ -d /run/lock ] || ports_lock=/run/fsynclab-farm-ports.lock
lock_ports() { exec 9>>"$ports_lock"; flock 9; }
unlock_ports() { flock -u 9; exec 9>&-; }

# Waits up to $1 seconds for the command after it to succeed.
wait_for() {
  local limit=$1; shift
  for _ in $(seq $((limit * 5))); do
    if "$@" >/dev/null 2>&1; then return 0; fi
    sleep 0.2
  done
  return 1
}

secret() { head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n'; }

if [ "$want_pg" -eq 1 ]; then
  pgbin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
  [ -x "$pgbin/initdb" ] || die "PostgreSQL is not installed (scripts/setup.sh installs it)"
  pg="$dir/pg"
  mkdir -p "$pg"
  chown postgres:postgres "$pg"
  chmod 700 "$pg"
  super_pw=$(secret); farm_pw=$(secret)
  # initdb --pwfile reads the file as the postgres user.
  (umask 077; echo "$super_pw" >"$pg/superuser.pw")
  chown postgres:postgres "$pg/superuser.pw"
  runuser -u postgres -- "$pgbin/initdb" -D "$pg/data" -U postgres --pwfile="$pg/superuser.pw" \
    --auth=scram-sha-256 -E UTF8 --no-sync >"$pg/initdb.log" 2>&1 || { cat "$pg/initdb.log" >&2; die "initdb failed"; }
  lock_ports
  port=$(free_port)
  # -w: pg_ctl returns once the server accepts connections, so on its port.
  runuser -u postgres -- "$pgbin/pg_ctl" -D "$pg/data" -l "$pg/server.log" -w -t 30 \
    -o "-p $port -k $pg -c listen_addresses=127.0.0.1" start >/dev/null 9>&- \
    || { cat "$pg/server.log" >&2; die "PostgreSQL did not start"; }
  unlock_ports
  PGPASSWORD=$super_pw "$pgbin/psql" -q -h 127.0.0.1 -p "$port" -U postgres -d postgres -v ON_ERROR_STOP=1 \
    -c "CREATE ROLE fsynclab LOGIN CREATEDB PASSWORD '$farm_pw'" \
    -c "CREATE DATABASE fsynclab OWNER fsynclab" >/dev/null
  echo "FARM_STORE=postgres://fsynclab:$farm_pw@127.0.0.1:$port/fsynclab" >>"$env_file"
fi

if [ "$nodes" -gt 0 ]; then
  for tool in munged mungekey slurmctld slurmd sbatch; do
    command -v "$tool" >/dev/null || die "$tool is missing (scripts/setup.sh installs slurm-wlm and munge)"
  done
  # MUNGE, as its own user, on a socket and key of its own (AuthInfo=socket= below).
  mg="$dir/munge"
  mkdir -p "$mg"
  chown munge:munge "$mg"
  chmod 711 "$mg"
  runuser -u munge -- mungekey --create --keyfile="$mg/munge.key" 2>"$mg/mungekey.log" \
    || { cat "$mg/mungekey.log" >&2; die "mungekey failed"; }
  runuser -u munge -- munged --socket="$mg/munge.socket" --key-file="$mg/munge.key" \
    --pid-file="$mg/munged.pid" --log-file="$mg/munged.log" --seed-file="$mg/munged.seed" 9>&- \
    || { cat "$mg/munged.log" >&2 2>/dev/null; die "munged did not start"; }
  wait_for 10 test -S "$mg/munge.socket" || die "munged made no socket"

  sl="$dir/slurm"
  mkdir -p "$sl/state" "$sl/spool"
  lock_ports
  ctl_port=$(free_port); echo "# slurmctld :$ctl_port" >>"$env_file"
  host=$(hostname -s)
  conf="$sl/slurm.conf"
  cat >"$conf" <<EOF
# A throwaway cluster of fsynclab's farm test (scripts/farm-up.sh).
ClusterName=fsynclab-farm
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$ctl_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$mg/munge.socket
StateSaveLocation=$sl/state
SlurmdSpoolDir=$sl/spool/%n
SlurmctldPidFile=$sl/slurmctld.pid
SlurmdPidFile=$sl/slurmd-%n.pid
SlurmctldLogFile=$sl/slurmctld.log
SlurmdLogFile=$sl/slurmd-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SwitchType=switch/none
MpiDefault=none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SlurmdParameters=config_overrides
ReturnToService=2
KillWait=5
MinJobAge=300
InactiveLimit=0
EOF
  names=()
  for n in $(seq "$nodes"); do
    p=$(free_port); echo "# slurmd n$n :$p" >>"$env_file"
    echo "NodeName=n$n NodeHostname=$host NodeAddr=127.0.0.1 Port=$p CPUs=1 RealMemory=256 State=UNKNOWN" >>"$conf"
    names+=("n$n")
    mkdir -p "$sl/spool/n$n"
  done
  echo "PartitionName=farm Nodes=$(IFS=,; echo "${names[*]}") Default=YES MaxTime=INFINITE State=UP" >>"$conf"
  export SLURM_CONF="$conf"
  slurmctld -f "$conf" 9>&- || { cat "$sl/slurmctld.log" >&2 2>/dev/null; die "slurmctld did not start"; }
  # slurmd registers once, when it starts: one that starts before the controller answers stays
  # UNKNOWN until the controller's next ping of its nodes, minutes later. Start the nodes once
  # the controller answers, and start again any node that has not registered after a while.
  ctl_up() { scontrol ping | grep -q "is UP"; }
  wait_for 30 ctl_up || { tail -n 20 "$sl/slurmctld.log" >&2; die "slurmctld did not answer"; }
  start_slurmd() {
    slurmd -f "$conf" -N "$1" 9>&- || { cat "$sl/slurmd-$1.log" >&2 2>/dev/null; die "slurmd -N $1 did not start"; }
  }
  node_port() { sed -n "s/^NodeName=$1 .* Port=\([0-9]*\) .*/\1/p" "$conf"; }
  listens() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
  # Started with the lock held, and it is released once each slurmd listens on its port (the
  # controller answering, above, means it listens on its own).
  start_slurmd_on_its_port() {
    start_slurmd "$1"
    wait_for 10 listens "$(node_port "$1")" || { tail -n 20 "$sl/slurmd-$1.log" >&2; die "slurmd -N $1 did not listen"; }
  }
  for name in "${names[@]}"; do start_slurmd_on_its_port "$name"; done
  unlock_ports
  idle_nodes() { sinfo -h -N -p farm -t idle -o %N | sort -u; }
  idle() { [ "$(idle_nodes | wc -l)" -eq "$nodes" ]; }
  for attempt in 1 2 3; do
    wait_for 10 idle && break
    [ "$attempt" -eq 3 ] && { sinfo -N >&2 || true; tail -n 20 "$sl"/*.log >&2; die "the nodes did not become idle"; }
    for name in "${names[@]}"; do
      idle_nodes | grep -qx "$name" && continue
      pid=$(cat "$sl/slurmd-$name.pid" 2>/dev/null || true)
      # Its port is free between the two: hold the lock so that no other farm picks it.
      lock_ports
      if [ -n "$pid" ] && kill "$pid" 2>/dev/null; then wait_for 10 sh -c "! kill -0 $pid" || true; fi
      start_slurmd_on_its_port "$name"
      unlock_ports
    done
  done
  echo "SLURM_CONF=$conf" >>"$env_file"
  echo "FARM_PARTITION=farm" >>"$env_file"
fi
grep -v '^#' "$env_file"
