#!/bin/sh
# A PostgreSQL client whose acknowledged commits go to a ledger outside the disk under test.
# Run by `fsynclab exec` in the scratch filesystem (see docs/durability.md, "What an fsync buys"):
# makes a cluster there with fsync=$FSYNC (on or off), then commits one row at a time and
# appends each id to $LEDGER once its COMMIT returned. Runs until fsynclab cuts the power.
set -eu
PG=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)
SOCK=${SOCK:-/tmp/fsynclab-pg-sock}
mkdir -p "$SOCK" pg
chown postgres "$SOCK" pg
runuser -u postgres -- "$PG/initdb" -D pg -A trust >/dev/null
runuser -u postgres -- "$PG/pg_ctl" -D pg -l pg/server.log -w \
    -o "-c fsync=${FSYNC:-on} -c listen_addresses= -c unix_socket_directories=$SOCK" start >/dev/null
psql -h "$SOCK" -U postgres -qc 'create table t (id int primary key)'
echo "fsynclab example: committing rows with fsync=${FSYNC:-on}" >&2
i=0
while :; do
    i=$((i + 1))
    psql -h "$SOCK" -U postgres -qc "insert into t values ($i)" && echo "$i" >> "$LEDGER"
done
