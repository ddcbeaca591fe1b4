#!/bin/sh
# Run by `fsynclab exec --check` on the recovered filesystem: starts PostgreSQL on the data
# directory as the power cut left it (it replays its WAL), and finds every committed id of
# the ledger in the table. Exit status 0: nothing acknowledged was lost; 1: some was.
set -eu
PG=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)
SOCK=${SOCK:-/tmp/fsynclab-pg-sock}
rm -f pg/postmaster.pid
if ! runuser -u postgres -- "$PG/pg_ctl" -D pg -l pg/recovery.log -w \
    -o "-c listen_addresses= -c unix_socket_directories=$SOCK" start >/dev/null; then
    echo "PostgreSQL did not start after the cut:"; tail -n 5 pg/recovery.log; exit 1
fi
psql -h "$SOCK" -U postgres -Atc 'select id from t' > stored.txt 2>/dev/null || echo "the table is not there after the cut"
runuser -u postgres -- "$PG/pg_ctl" -D pg -m fast -w stop >/dev/null
rmdir "$SOCK" 2>/dev/null || true
acked=$(wc -l < "$LEDGER")
sort "$LEDGER" > ledger.sorted
sort stored.txt > stored.sorted
lost=$(comm -23 ledger.sorted stored.sorted | wc -l)
echo "PostgreSQL: $acked commits acknowledged, $lost of them missing after the cut"
[ "$lost" -eq 0 ]
